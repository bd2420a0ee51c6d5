"""Pieces shared by scripts/trogdor-worker (one agent's kbench run) and scripts/distributed
(submit, wait, merge): the workload's keys, the secret rule, and the exact merge of
several processes' Google Benchmark JSON.

Merging is exact where it can be: records and error counts are summed, latency
percentiles are recomputed from the summed histogram buckets that kbench writes for each
windowed Produce row (kbench_intervals[...].latency_buckets), never averaged, and
throughput is each agent's rate over the window all agents shared, summed.
Pure stdlib.
"""

import math

from kbench import facts

# The workload scripts/distributed hands each agent (ExternalCommandSpec "workload").
# Trogdor logs it whole and serves it on its REST API, so it never holds a secret.
WORKLOAD_KEYS = {
    "kbench": "path of build/kbench on the agent's host",
    "bootstrap": "the cluster's bootstrap address, as the agents see it",
    "produce": "a --produce SPEC",
    "consume": "a --consume SPEC",
    "filter": "a --benchmark_filter (default: the family of the spec)",
    "window_seconds": "--window-seconds",
    "warmup_seconds": "--warmup-seconds",
    "repetitions": "--benchmark_repetitions",
    "settings": "librdkafka settings without secrets, {key: value}",
    "client_config_file": "a --client-config FILE on the agent's host (secrets go there)",
    "start_unix_ms": "the common start: the agent starts kbench then",
    "out_dir": "where the agent keeps its kbench.json and log",
    "agent": "the agent's name, for messages",
}
REQUIRED_KEYS = ("kbench", "bootstrap", "start_unix_ms")

# kbench's own rule (harness/context.h SecretSettings, read from kbench --describe=json).
is_secret_setting = facts.is_secret_setting


def check_workload(workload):
    """Returns a list of problems (empty when the workload can run)."""
    if not isinstance(workload, dict):
        return ["the workload is not a JSON object"]
    problems = []
    for key in sorted(set(workload) - set(WORKLOAD_KEYS)):
        problems.append("unknown workload key %r (known: %s)" % (key, ", ".join(sorted(WORKLOAD_KEYS))))
    for key in REQUIRED_KEYS:
        if not workload.get(key):
            problems.append("the workload has no %r" % key)
    if not workload.get("produce") and not workload.get("consume"):
        problems.append("the workload has neither 'produce' nor 'consume'")
    settings = workload.get("settings", {})
    if not isinstance(settings, dict):
        problems.append("'settings' must be an object of librdkafka settings")
    else:
        for key in sorted(settings):
            if is_secret_setting(key):
                problems.append("setting %r is a secret: it would be logged by Trogdor; put it "
                                "in a client config file on the agents (client_config_file)" % key)
    return problems


# ---------------------------------------------------------------- histograms

def percentile(buckets, count, max_us, q):
    """LatencyHistogram::Percentile on (upper bound, count) buckets: the upper bound of the
    bucket holding the ceil(q * count)-th value, clamped to the maximum."""
    if count == 0:
        return 0
    q = min(max(q, 0.0), 1.0)
    rank = max(1, math.ceil(q * count))
    seen = 0
    for bound, n in buckets:
        seen += n
        if seen >= rank:
            return min(bound, max_us)
    return max_us


def merge_buckets(histograms):
    """Sum of histograms given as dicts with latency_buckets/count/sum/min/max."""
    total = {}
    for h in histograms:
        for bound, n in h["latency_buckets"]:
            total[bound] = total.get(bound, 0) + n
    return {"latency_count": sum(h["latency_count"] for h in histograms),
            "latency_sum_us": sum(h["latency_sum_us"] for h in histograms),
            "latency_min_us": min((h["latency_min_us"] for h in histograms), default=0),
            "latency_max_us": max([0] + [h["latency_max_us"] for h in histograms]),
            "latency_buckets": sorted(total.items())}


def latency_counters(h, open_loop):
    """The counters kbench's ReportLatency writes, from a (merged) histogram."""
    prefix = "" if open_loop else "queue_"
    out = {}
    lat = facts.latency()
    for q in lat["quantiles"]:
        out[q["metric" if open_loop else "queue_metric"]] = float(
            percentile(h["latency_buckets"], h["latency_count"], h["latency_max_us"], q["q"]))
    out[lat["max"]["metric" if open_loop else "queue_metric"]] = float(h["latency_max_us"])
    out[prefix + "avg_us"] = (h["latency_sum_us"] / h["latency_count"]) if h["latency_count"] else 0.0
    return out


# ---------------------------------------------------------------- merging

# Counters that add up across agents; the latency counters are recomputed; every other
# numeric counter is the records-weighted mean of the agents' values (batch shapes, ratios).
SUMMED = {"errors", "retries", "queue_full", "lost_records", "duplicate_records",
          "delivered_records", "end_offsets", "target_rate", "achieved_rate", "delivered_rate",
          "requests_per_second", "wire_bytes_per_second"}
RECOMPUTED = {p + n for p in ("", "queue_") for n in
              ("p50_us", "p95_us", "p99_us", "p999_us", "max_us", "avg_us")}
STANDARD = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
            "repetitions", "repetition_index", "threads", "iterations", "real_time",
            "cpu_time", "time_unit", "error_occurred", "error_message", "aggregate_name",
            "aggregate_unit", "label"}
MIB = 1024.0 * 1024.0


def _interval_spans(series):
    start = series.get("start_unix_seconds")
    if start is None:
        return None
    spans, t = [], start
    for width, rps, mbps in zip(series["seconds"], series["records_per_second"],
                                series["mb_per_second"]):
        spans.append((t, t + width, rps, mbps))
        t += width
    return spans


def common_window(series_by_agent):
    """(start, end) of the window every agent measured, from their interval samples."""
    spans = [_interval_spans(s) for s in series_by_agent.values()]
    if not spans or any(not s for s in spans):
        return None
    return max(s[0][0] for s in spans), min(s[-1][1] for s in spans)


def rate_in_window(series, lo, hi):
    """(records/s, bytes/s, seconds) of the agent within [lo, hi]: each interval sample counts
    with the part of it that lies inside (its rate taken as even within its ~1 s)."""
    records = value_bytes = seconds = 0.0
    for a, b, rps, mbps in _interval_spans(series) or []:
        inside = min(b, hi) - max(a, lo)
        if inside > 0:
            records += rps * inside
            value_bytes += mbps * MIB * inside
            seconds += inside
    if seconds <= 0:
        return None
    return records / seconds, value_bytes / seconds, seconds


def _rows(result):
    """Iteration rows of one process's JSON by (run_name, repetition_index)."""
    out = {}
    for b in result.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        out[(b.get("run_name", b["name"]), b.get("repetition_index", 0))] = b
    return out


def _series(result, run_name, rep):
    for s in result.get("kbench_intervals", {}).get(run_name, []):
        if s.get("repetition_index", 0) == rep:
            return s
    return None


def merge(results, failures, expected=()):
    """results: {agent: kbench JSON}, failures: {agent: why} for agents without a result or
    with a failed run, expected: the row names the spec selects (each is written, failed
    when no agent reported it). Returns (benchmarks, kbench_intervals, row errors)."""
    agents = sorted(set(results) | set(failures))
    rows_by_agent = {a: _rows(r) for a, r in results.items()}
    keys = list(dict.fromkeys(k for a in sorted(results) for k in rows_by_agent[a]))
    benchmarks, intervals, errors = [], {}, []
    for name in expected:
        if not any(k[0] == name for k in keys):
            why = ["%s: %s" % (a, failures.get(a, "no result for this row")) for a in agents]
            message = "distributed over %s: %s" % (", ".join(agents), "; ".join(why))
            benchmarks.append({"name": name, "run_name": name, "run_type": "iteration",
                               "repetitions": 1, "repetition_index": 0, "threads": 1,
                               "iterations": 0, "real_time": 0, "cpu_time": 0, "time_unit": "ns",
                               "error_occurred": True, "error_message": message})
            errors.append("%s: %s" % (name, message))
    for run_name, rep in keys:
        entries = {a: rows_by_agent[a].get((run_name, rep)) for a in results}
        first = next(e for e in entries.values() if e)
        row = {k: v for k, v in first.items() if k in STANDARD}
        why = ["%s: %s" % (a, failures[a]) for a in sorted(failures)]
        why += ["%s: no result for this row" % a for a, e in sorted(entries.items()) if not e]
        why += ["%s: %s" % (a, e.get("error_message", "error"))
                for a, e in sorted(entries.items()) if e and e.get("error_occurred")]
        if not why:
            merged, series, problem = _merge_row(run_name, rep, entries, results)
            if problem:
                why.append(problem)
            else:
                row.update(merged)
                if series:
                    intervals.setdefault(run_name, []).append(series)
        if why:
            row["error_occurred"] = True
            row["error_message"] = "distributed over %s: %s" % (", ".join(agents), "; ".join(why))
            errors.append("%s: %s" % (row["name"], row["error_message"]))
        benchmarks.append(row)
    return benchmarks, intervals, errors


def _merge_row(run_name, rep, entries, results):
    series = {a: _series(results[a], run_name, rep) for a in entries}
    out = {}
    # Throughput: each agent's rate over the common window, summed.
    window = None
    if all(series.values()) and all("start_unix_seconds" in s for s in series.values()):
        lo, hi = common_window(series)
        if hi <= lo:
            return None, None, "the agents' windows do not overlap (start skew %.3f s)" % (lo - hi)
        rates = {a: rate_in_window(s, lo, hi) for a, s in series.items()}
        short = sorted(a for a, r in rates.items() if r is None)
        if short:
            return None, None, ("%s measured nothing in the common window" % ", ".join(short))
        out["items_per_second"] = sum(r[0] for r in rates.values())
        out["bytes_per_second"] = sum(r[1] for r in rates.values())
        records = {a: r[0] for a, r in rates.items()}
        window = (lo, hi)
    else:
        for key in ("items_per_second", "bytes_per_second"):
            if any(key in e for e in entries.values()):
                out[key] = sum(e.get(key, 0.0) for e in entries.values())
        records = {a: e.get("items_per_second", 1.0) for a, e in entries.items()}
    counters = {k for e in entries.values() for k, v in e.items()
                if k not in STANDARD and isinstance(v, (int, float)) and not isinstance(v, bool)
                and k not in ("items_per_second", "bytes_per_second")}
    for key in sorted(counters - RECOMPUTED):
        values = {a: e[key] for a, e in entries.items() if key in e}
        if key in SUMMED:
            out[key] = float(sum(values.values()))
        else:
            out[key] = sum(v * records[a] for a, v in values.items()) / (
                sum(records[a] for a in values) or 1.0)
    if "rate_shortfall" in out and "target_rate" in out and "achieved_rate" in out:
        # fixtures/rate_search.h FellShort, over the summed rates.
        floor = 0.99 * out["target_rate"]
        short = out["achieved_rate"] < floor or out.get("delivered_rate", floor) < floor
        out["rate_shortfall"] = 1.0 if short else 0.0
    merged_series = None
    hists = [s for s in series.values() if s and "latency_buckets" in s]
    if hists and len(hists) == len(series):
        h = merge_buckets(hists)
        open_loop = any(k in RECOMPUTED and not k.startswith("queue_") for e in entries.values()
                        for k in e)
        out.update(latency_counters(h, open_loop))
        merged_series = {"repetition_index": rep}
        if window:
            merged_series["start_unix_seconds"] = window[0]
            merged_series["seconds"] = [window[1] - window[0]]
            merged_series["records_per_second"] = [out["items_per_second"]]
            merged_series["mb_per_second"] = [out.get("bytes_per_second", 0.0) / MIB]
            out["window_seconds"] = window[1] - window[0]
        merged_series.update(h)
    elif any(k in RECOMPUTED for e in entries.values() for k in e):
        # Percentiles without buckets cannot be merged: averaging them would be wrong.
        return None, None, "an agent's JSON has no latency buckets (kbench too old?)"
    return out, merged_series, None
