"""Run kbench rows from many hosts at once through Apache Kafka's Trogdor, and merge the
agents' results into one Google Benchmark JSON (docs/distributed.md).

    HOST=$(scripts/trogdor start --agents 3)
    BOOTSTRAP=$(scripts/kafka start --port-base auto --host "$HOST" --dir /tmp/k3)
    scripts/distributed run --agents 3 --bootstrap "$BOOTSTRAP" \\
        --produce 'acks=1,record_bytes=100,rate=20000' --out results/dist.json

One task per agent (scripts/trogdor-worker runs kbench there), all started at one common
time. A merged row's throughput is the sum of the agents' rates over the window they all
measured; its latency percentiles come from the summed histogram buckets (never averaged).
An agent that fails or disappears fails every merged row with its name.

Exit status: 0 every row merged, 1 a row failed (the JSON is still written), 2 bad usage
or a spec kbench refuses.
"""

import bisect
import contextlib
import itertools
import json
import math
import os
import pathlib
import sys
import time
import urllib.error
import urllib.request

from kbench import ROOT, cli, facts
from kbench import results as kr

SPEC_CLASS = "org.apache.kafka.trogdor.workload.ExternalCommandSpec"
# How long an agent may not answer before its row is failed as disappeared.
LOST_AFTER_SECONDS = 10.0

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


def check_workload(workload):
    """Returns a list of problems (empty when the workload can run)."""
    if not isinstance(workload, dict):
        return ["the workload is not a JSON object"]
    problems = ["unknown workload key %r (known: %s)" % (key, ", ".join(sorted(WORKLOAD_KEYS)))
                for key in sorted(set(workload) - set(WORKLOAD_KEYS))]
    problems += ["the workload has no %r" % key for key in REQUIRED_KEYS if not workload.get(key)]
    if not workload.get("produce") and not workload.get("consume"):
        problems.append("the workload has neither 'produce' nor 'consume'")
    settings = workload.get("settings", {})
    if not isinstance(settings, dict):
        problems.append("'settings' must be an object of librdkafka settings")
    else:
        problems += ["setting %r is a secret: it would be logged by Trogdor; put it in a client config file "
                     "on the agents (client_config_file)" % key
                     for key in sorted(settings) if facts.is_secret_setting(key)]
    return problems


def percentile(buckets, count, max_us, q):
    """LatencyHistogram::Percentile: the bound of the bucket of the ceil(q * count)-th value, at most max."""
    if count == 0:
        return 0
    rank = max(1, math.ceil(min(max(q, 0.0), 1.0) * count))
    i = bisect.bisect_left(list(itertools.accumulate(n for _, n in buckets)), rank)
    return min(buckets[i][0], max_us) if i < len(buckets) else max_us


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
    lat, key = facts.latency(), "metric" if open_loop else "queue_metric"
    out = {q[key]: float(percentile(h["latency_buckets"], h["latency_count"], h["latency_max_us"], q["q"]))
           for q in lat["quantiles"]}
    out[lat["max"][key]] = float(h["latency_max_us"])
    out[("" if open_loop else "queue_") + "avg_us"] = (
        h["latency_sum_us"] / h["latency_count"] if h["latency_count"] else 0.0)
    return out


STANDARD = kr.STANDARD_KEYS
MIB = 1024.0 * 1024.0


def recomputed():
    """The latency counters a histogram gives, open-loop and queueing names alike."""
    lat = facts.latency()
    names = [lat["max"]] + lat["quantiles"]
    return {q[k] for q in names for k in ("metric", "queue_metric")} | {"avg_us", "queue_avg_us"}


def _interval_spans(series):
    start = series.get("start_unix_seconds")
    if start is None:
        return None
    ends = list(itertools.accumulate(series["seconds"], initial=start))
    return list(zip(ends, ends[1:], series["records_per_second"], series["mb_per_second"]))


def common_window(series_by_agent):
    """(start, end) of the window every agent measured, from their interval samples."""
    spans = [_interval_spans(s) for s in series_by_agent.values()]
    if not spans or any(not s for s in spans):
        return None
    return max(s[0][0] for s in spans), min(s[-1][1] for s in spans)


def rate_in_window(series, lo, hi):
    """(records/s, bytes/s, seconds) of the agent's interval samples within [lo, hi], or None."""
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
    return {(b.get("run_name", b["name"]), b.get("repetition_index", 0)): b
            for b in result.get("benchmarks", []) if kr.is_iteration(b)}


def _series(result, run_name, rep):
    return next((s for s in result.get("kbench_intervals", {}).get(run_name, [])
                 if s.get("repetition_index", 0) == rep), None)


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
    # Counters by their merge rule (means weighted by each agent's records/s); latency is
    # recomputed from the pooled histogram below.
    latency = recomputed()
    counters = {k for e in entries.values() for k, v in e.items()
                if k not in STANDARD and isinstance(v, (int, float)) and not isinstance(v, bool)
                and k not in ("items_per_second", "bytes_per_second")} - latency
    out.update(kr.combine([{k: e[k] for k in counters if k in e} for e in entries.values()],
                          weights=[records[a] for a in entries]))
    if "rate_shortfall" in out and "target_rate" in out and "achieved_rate" in out:
        # fixtures/rate_search.h FellShort, over the summed rates.
        floor = 0.99 * out["target_rate"]
        short = out["achieved_rate"] < floor or out.get("delivered_rate", floor) < floor
        out["rate_shortfall"] = 1.0 if short else 0.0
    merged_series = None
    hists = [s for s in series.values() if s and "latency_buckets" in s]
    if hists and len(hists) == len(series):
        h = merge_buckets(hists)
        open_loop = any(k in latency and not k.startswith("queue_") for e in entries.values() for k in e)
        out.update(latency_counters(h, open_loop))
        merged_series = {"repetition_index": rep}
        if window:
            out["window_seconds"] = window[1] - window[0]
            merged_series.update(start_unix_seconds=window[0], seconds=[out["window_seconds"]],
                                 records_per_second=[out["items_per_second"]],
                                 mb_per_second=[out.get("bytes_per_second", 0.0) / MIB])
        merged_series.update(h)
    elif any(k in latency for e in entries.values() for k in e):
        # Percentiles without buckets cannot be merged: averaging them would be wrong.
        return None, None, "an agent's JSON has no latency buckets (kbench too old?)"
    return out, merged_series, None


def add_arguments(parser):
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help="run one task per agent and merge the results",
                         description="Run one task per agent and merge the results.")
    run.add_argument("--agents", type=int, required=True, metavar="N", help="how many agents run the rows")
    spec = run.add_mutually_exclusive_group(required=True)
    spec.add_argument("--produce", metavar="SPEC", help="kbench --produce SPEC (one row set)")
    spec.add_argument("--consume", metavar="SPEC", help="kbench --consume SPEC")
    run.add_argument("--bootstrap", metavar="HOST:PORT", default=os.environ.get("KBENCH_BOOTSTRAP"),
                     help="bootstrap address as the agents reach it (env KBENCH_BOOTSTRAP)")
    run.add_argument("--filter", metavar="REGEX", help="a --benchmark_filter (default: the spec's family)")
    run.add_argument("--window-seconds", type=float, default=2.0, metavar="S", help="kbench's (default %(default)s)")
    run.add_argument("--warmup-seconds", type=float, default=1.0, metavar="S", help="kbench's (default %(default)s)")
    run.add_argument("--repetitions", type=int, default=1, metavar="N", help="of each row (default %(default)s)")
    run.add_argument("-X", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                     help="a librdkafka setting (no secrets: Trogdor logs the workload)")
    run.add_argument("--client-config", metavar="FILE",
                     help="a client config file at this path on every agent's host (secrets)")
    run.add_argument("--dir", default=os.environ.get("KBENCH_TROGDOR_DIR", "/tmp/kbench-trogdor"),
                     help="scripts/trogdor's state directory (env KBENCH_TROGDOR_DIR, default %(default)s)")
    run.add_argument("--kbench", metavar="PATH", default=os.path.join(ROOT, "build", "kbench"),
                     help="the kbench binary at this path on every agent's host")
    run.add_argument("--worker", metavar="PATH", default=os.path.join(ROOT, "scripts", "trogdor-worker"),
                     help="scripts/trogdor-worker at this path on every agent's host")
    run.add_argument("--start-delay", type=float, default=3.0, metavar="S",
                     help="seconds from submission to the common start (default %(default)s)")
    run.add_argument("--timeout", type=float, default=0, metavar="S",
                     help="seconds to wait for the agents (default: from the rows' windows)")
    run.add_argument("--out", default="distributed.json", metavar="FILE", help="merged JSON (default %(default)s)")


# What a REST call that did not work raises.
HTTP_ERRORS = (urllib.error.URLError, OSError, ValueError)


def http(method, url, body=None, timeout=10):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        text = r.read().decode()
    return json.loads(text) if text else {}


def try_http(method, url, body=None):
    """http(), for a call whose failure changes nothing (freeing or stopping a task)."""
    with contextlib.suppress(*HTTP_ERRORS):
        http(method, url, body)


def read_cluster(d):
    try:
        coordinator = pathlib.Path(d, "coordinator").read_text().strip()
        nodes = json.loads(pathlib.Path(d, "cluster.json").read_text())["nodes"]
    except (OSError, ValueError, KeyError) as e:
        cli.die("no Trogdor cluster in %s (%s); run scripts/trogdor start first" % (d, e))
    agents = sorted((n for n, v in nodes.items() if "trogdor.agent.port" in v), key=lambda n: (len(n), n))
    urls = {n: "http://%s:%s" % (nodes[n]["hostname"], nodes[n]["trogdor.agent.port"]) for n in agents}
    return coordinator, agents, urls


def check_spec(args):
    """kbench parses the spec itself: a spec it refuses is refused here, before any task."""
    if not os.access(args.kbench, os.X_OK):
        cli.die("kbench not found at %s (build it, or give --kbench)" % args.kbench)
    rows = cli.kbench_rows(args.kbench, [
        "--produce=" + args.produce if args.produce else "--consume=" + args.consume,
        "--benchmark_filter=" + (args.filter or ("^Produce/" if args.produce else "^Consume/"))]
        + [word for s in args.settings for word in ("-X", s)])
    if not rows:
        cli.die("the spec and filter select no kbench row")
    return rows


def main(args):
    if args.agents < 1:
        cli.die("--agents must be at least 1")
    if not args.bootstrap:
        cli.die("no bootstrap address: give --bootstrap HOST:PORT (as the agents reach it)")
    settings = {}
    for s in args.settings:
        key, sep, value = s.partition("=")
        if not sep or not key:
            cli.die("-X takes KEY=VALUE, got %r" % s)
        if facts.is_secret_setting(key):
            cli.die("-X %s is a secret: Trogdor logs and serves every workload, so pass secrets "
                    "in --client-config FILE (a file on the agents' hosts)" % key)
        settings[key] = value
    if args.window_seconds <= 0 or args.warmup_seconds < 0 or args.repetitions < 1:
        cli.die("--window-seconds must be > 0, --warmup-seconds >= 0, --repetitions >= 1")
    # The merged result is written after the whole workload: its path is checked first.
    cli.check_out_file(args.out, "--out")
    rows = check_spec(args)
    cli.dry_run_exit()
    coordinator, agents, agent_urls = read_cluster(args.dir)
    if args.agents > len(agents):
        cli.die("--agents %d: the Trogdor cluster in %s has only %d agent(s)" % (args.agents, args.dir, len(agents)))
    agents = agents[:args.agents]

    t_submit = time.time()
    start_ms = int((t_submit + args.start_delay) * 1000)
    # Generous: each row runs warm-up, window and drain per repetition, plus start-up.
    budget = args.timeout or (args.start_delay + 30 + len(rows) * args.repetitions
                              * (args.warmup_seconds + args.window_seconds + 15))
    run_id = "kbench-%d" % int(t_submit * 1000)
    tasks = {}
    for agent in agents:
        workload = {"kbench": args.kbench, "bootstrap": args.bootstrap,
                    "window_seconds": args.window_seconds, "warmup_seconds": args.warmup_seconds,
                    "repetitions": args.repetitions, "settings": settings, "start_unix_ms": start_ms, "agent": agent}
        workload["produce" if args.produce else "consume"] = args.produce or args.consume
        if args.filter:
            workload["filter"] = args.filter
        if args.client_config:
            workload["client_config_file"] = os.path.abspath(args.client_config)
        problems = check_workload(workload)
        if problems:
            cli.die("; ".join(problems))
        task = "%s-%s" % (run_id, agent)
        spec = {"class": SPEC_CLASS, "startMs": int(t_submit * 1000), "durationMs": int(budget * 1000),
                "commandNode": agent, "command": [args.worker], "workload": workload, "shutdownGracePeriodMs": 5000}
        try:
            http("POST", coordinator + "/coordinator/task/create", {"id": task, "spec": spec})
        except HTTP_ERRORS as e:
            cli.die("the coordinator at %s refused task %s: %s" % (coordinator, task, e), status=1)
        tasks[agent] = task
    cli.info("%d task(s) submitted to %s; common start in %.1f s; rows: %s"
             % (len(tasks), coordinator, args.start_delay, ", ".join(rows)))

    results, failures = wait_for(coordinator, tasks, agent_urls, t_submit + budget + 15)
    benchmarks, intervals, errors = merge(results, failures, rows)
    context = dict(results[min(results)].get("context", {})) if results else {}
    context.update(distributed_agents=",".join(agents), distributed_coordinator=coordinator,
                   distributed_start_unix_ms=str(start_ms))
    out = {"context": context, "benchmarks": benchmarks, "kbench_intervals": intervals,
           "kbench_agents": {a: results.get(a) for a in agents}, "kbench_agent_failures": failures}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    kr.write_json(args.out, out)
    # Each task holds its agent's whole JSON: freed, so that a coordinator does not grow.
    for task in tasks.values():
        try_http("DELETE", coordinator + "/coordinator/tasks?taskId=" + task)
    for b in benchmarks:
        if not b.get("error_occurred"):
            cli.info("%s: %.0f records/s over %.2f s, p99 %s us (%d agents)"
                     % (b["name"], b.get("items_per_second", 0), b.get("window_seconds", 0),
                        b.get("p99_us", b.get("queue_p99_us", "-")), len(agents)))
    for e in errors:
        cli.info("error: %s" % e)
    cli.info("wrote %s" % args.out)
    return 1 if errors or not benchmarks else 0


def wait_for(coordinator, tasks, agent_urls, deadline):
    """({agent: result}, {agent: why it failed}) once every task is DONE or its agent lost."""
    results, failures, last_seen, progress = {}, {}, {}, {}
    pending = dict(tasks)
    while pending:
        now = time.time()
        try:
            query = "&".join("taskId=" + t for t in pending.values())
            states = http("GET", coordinator + "/coordinator/tasks?" + query).get("tasks", {})
        except HTTP_ERRORS as e:
            states = {}
            if now > deadline:
                for agent in pending:
                    failures[agent] = "the coordinator stopped answering (%s)" % e
                break
        for agent, task in list(pending.items()):
            state = states.get(task, {})
            status = state.get("status") or {}
            if isinstance(status, dict) and status.get("progress") and status["progress"] != progress.get(agent):
                progress[agent] = status["progress"]
                print("%s: %s" % (agent, status["progress"]), file=sys.stderr)
            if state.get("state") == "DONE":
                del pending[agent]
                result = status.get("result") if isinstance(status, dict) else None
                if result:
                    results[agent] = result
                # A row that failed there fails its merged row; anything else fails every row.
                row_failed = result and any(b.get("error_occurred") for b in result.get("benchmarks", []))
                if state.get("error") and not row_failed:
                    failures[agent] = state["error"]
                elif not result:
                    failures[agent] = "finished without a result"
                continue
            try:
                http("GET", agent_urls[agent] + "/agent/status", timeout=3)
                last_seen[agent] = now
            except HTTP_ERRORS:
                if now - last_seen.setdefault(agent, now) > LOST_AFTER_SECONDS:
                    failures[agent] = "the agent disappeared (no answer for %.0f s)" % LOST_AFTER_SECONDS
            if agent not in failures and now > deadline:
                failures[agent] = "no result within the time budget"
            if agent in failures:
                del pending[agent]
                try_http("PUT", coordinator + "/coordinator/task/stop", {"id": task})
        if pending:
            time.sleep(0.5)
    return results, failures
