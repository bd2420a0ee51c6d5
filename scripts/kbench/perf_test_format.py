"""kafka-producer-perf-test / kafka-consumer-perf-test output formats, for kbench results.

Used by the perf-test scenario (scripts/scenarios/perf-test), so kbench's numbers read
line for line like Kafka's own tools (the seed-004 reports are written in that format).

Formats (Kafka's ProducerPerformance / ConsumerPerformance):
  interval  "N records sent, R.r records/sec (M.mm MB/sec), A.a ms avg latency, X.x ms max latency."
  final     "N records sent, R.rrrrrr records/sec (M.mm MB/sec), A.aa ms avg latency,
             X.xx ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
  steady    the same as final, "N steady state records sent, ...": printed after it when the
            tool had --warmup-records, covering only the records after the warm-up
  consumer  "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
             rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
MB is MiB of record values, as the tools count it. The tools' percentiles are whole
milliseconds (their latencies are integer ms); kbench's microsecond values are truncated to
whole ms in the final line so the columns mean the same thing, and kept exact in JSON.
"""

import datetime
import json
import math
import re
import statistics

MIB = 1024.0 * 1024.0

PRODUCER_FINAL_RE = re.compile(
    r"(?P<records>\d+) (?P<steady>steady state )?records sent, "
    r"(?P<rps>[\d.]+) records/sec \((?P<mbps>[\d.]+) MB/sec\), "
    r"(?P<avg_ms>[\d.]+) ms avg latency, (?P<max_ms>[\d.]+) ms max latency, "
    r"(?P<p50_ms>\d+) ms 50th, (?P<p95_ms>\d+) ms 95th, (?P<p99_ms>\d+) ms 99th, "
    r"(?P<p999_ms>\d+) ms 99\.9th\.")
PRODUCER_WINDOW_RE = re.compile(
    r"(?P<records>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mbps>[\d.]+) MB/sec\), "
    r"(?P<avg_ms>[\d.]+) ms avg latency, (?P<max_ms>[\d.]+) ms max latency\.(?P<final> \(final\))?$")
CONSUMER_HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
                   "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
CONSUMER_LINE_RE = re.compile(
    r"^(?P<start>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}), (?P<end>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}), "
    r"(?P<mb>[\d.]+), (?P<mbps>[\d.]+), (?P<nmsg>\d+), (?P<nmsgps>[\d.]+), (?P<rebalance_ms>-?\d+), "
    r"(?P<fetch_ms>-?\d+), (?P<fetch_mbps>[\d.]+), (?P<fetch_nmsgps>[\d.]+)$")

FINAL_FIELDS = ["records", "rps", "mbps", "avg_ms", "max_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms"]


class InputError(Exception):
    """Unusable input file: reported as one line, exit status 1."""


# ------------------------------------------------------------------ formatting

def final_line(r):
    return ("%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, "
            "%d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th." %
            (r["records"], r["rps"], r["mbps"], r["avg_ms"], r["max_ms"],
             int(r["p50_ms"]), int(r["p95_ms"]), int(r["p99_ms"]), int(r["p999_ms"])))


def perf_time(ms):
    """ConsumerPerformance's date format, yyyy-MM-dd HH:mm:ss:SSS (local time)."""
    t = datetime.datetime.fromtimestamp(ms / 1000.0)
    return t.strftime("%Y-%m-%d %H:%M:%S:") + "%03d" % (int(ms) % 1000)


def consumer_line(c):
    return "%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f" % (
        perf_time(c["start_ms"]), perf_time(c["end_ms"]), c["mb"], c["mbps"], c["nmsg"], c["nmsgps"],
        c["rebalance_ms"], c["fetch_ms"], c["fetch_mbps"], c["fetch_nmsgps"])


# ------------------------------------------------------------------ parsing

def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise InputError("%s: not readable kbench JSON (%s)" % (path, e)) from e


def seconds(bench, key):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[bench.get("time_unit", "ns")]
    return bench[key] * scale


def pick_rows(doc, path, match):
    rows = [b for b in doc.get("benchmarks", [])
            if re.search(match, b.get("name", "")) and b.get("run_type", "iteration") == "iteration"]
    if not rows:
        raise InputError("%s: no benchmark matching %r" % (path, match))
    for b in rows:
        if b.get("error_occurred"):
            raise InputError("%s: %s failed: %s" % (path, b["name"], b.get("error_message", "?")))
    return rows


def kbench_producer(path, match=r"^Produce/"):
    """The Produce row's final-line fields; exact microsecond values kept beside them."""
    doc = load_json(path)
    b = dict(pick_rows(doc, path, match)[0])
    # Closed-loop rows name their percentiles queue_*_us (queueing under a load the client
    # sets itself); kafka-producer-perf-test prints the same measurement as latency.
    for key in ("avg_us", "max_us", "p50_us", "p95_us", "p99_us", "p999_us"):
        if key not in b and "queue_" + key in b:
            b[key] = b["queue_" + key]
    for key in ("items_per_second", "bytes_per_second", "avg_us", "max_us", "p50_us"):
        if key not in b:
            raise InputError("%s: %s has no %s counter (kbench too old?)" % (path, b["name"], key))
    secs = seconds(b, "real_time") * b["iterations"]
    r = {
        "name": b["name"],
        "records": int(round(b["items_per_second"] * secs)),
        "rps": b["items_per_second"],
        "mbps": b["bytes_per_second"] / MIB,
        "avg_ms": b["avg_us"] / 1000.0,
        "max_ms": b["max_us"] / 1000.0,
        "seconds": secs,
        "context": doc.get("context", {}),
    }
    for q in ("p50", "p95", "p99", "p999"):
        r[q + "_us"] = b[q + "_us"]
        r[q + "_ms"] = math.floor(b[q + "_us"] / 1000.0)  # whole ms, as the tool reports
    return r


def kbench_windows(stderr_path, label_match=r"^Produce/"):
    """kbench's progress lines of the matching benchmark, without their label prefix."""
    out = []
    try:
        with open(stderr_path, errors="replace") as f:
            for line in f:
                label, sep, rest = line.rstrip("\n").partition(": ")
                if not sep or not re.search(label_match, label) or "(fill)" in label:
                    continue
                if PRODUCER_WINDOW_RE.match(rest):
                    out.append(PRODUCER_WINDOW_RE.sub(lambda m: m.group(0).replace(" (final)", ""), rest))
    except OSError as e:
        raise InputError("%s: %s" % (stderr_path, e)) from e
    return out


def kbench_consumers(path, end_ms, match=r"^Consume/"):
    """Consumer-line fields of each Consume row. kbench assigns partitions (no group), so
    rebalance.time.ms is 0 and fetch.* equal the totals; the run's timed reads are placed so
    they end when the kbench process ended (end_ms)."""
    doc = load_json(path)
    out = []
    rows = pick_rows(doc, path, match)
    for b in reversed(rows):  # rows ran in order: walk back from the end
        secs = seconds(b, "real_time") * b["iterations"]
        nmsg = int(round(b["items_per_second"] * secs))
        mb = b["bytes_per_second"] * secs / MIB
        c = {"name": b["name"], "start_ms": end_ms - secs * 1000.0, "end_ms": end_ms, "mb": mb,
             "mbps": b["bytes_per_second"] / MIB, "nmsg": nmsg, "nmsgps": b["items_per_second"],
             "rebalance_ms": 0, "fetch_ms": int(round(secs * 1000.0)),
             "fetch_mbps": b["bytes_per_second"] / MIB, "fetch_nmsgps": b["items_per_second"]}
        end_ms = c["start_ms"]
        out.insert(0, c)
    return out


def tool_producer(path, warmup=0):
    """kafka-producer-perf-test's result: its steady-state line when it had --warmup-records
    (what follows the warm-up, as kbench measures), else its final line; and its interval
    lines after the warm-up (an interval holding any warm-up record is left out)."""
    try:
        text = open(path, errors="replace").read()
    except OSError as e:
        raise InputError("%s: %s" % (path, e)) from e
    finals = list(PRODUCER_FINAL_RE.finditer(text))
    if not finals:
        raise InputError("%s: no kafka-producer-perf-test final line (tool failed?)" % path)
    steady = [m for m in finals if m.group("steady")]
    if warmup > 0 and not steady:
        raise InputError("%s: no steady-state line although the tool had %d warm-up records"
                         % (path, warmup))
    m = steady[-1] if steady else finals[-1]
    whole = ("records", "p50_ms", "p95_ms", "p99_ms", "p999_ms")
    r = {k: (int(m.group(k)) if k in whole else float(m.group(k))) for k in FINAL_FIELDS}
    r["steady_state"] = bool(steady)
    r["windows"] = []
    sent = 0
    for line in text.splitlines():
        w = PRODUCER_WINDOW_RE.match(line.strip())
        if not w:
            continue
        before, sent = sent, sent + int(w.group("records"))
        if before >= warmup:
            r["windows"].append(line.strip())
    return r


def tool_consumer(path):
    """The data line after kafka-consumer-perf-test's CSV header (warnings may precede it)."""
    try:
        lines = [line.strip() for line in open(path, errors="replace")]
    except OSError as e:
        raise InputError("%s: %s" % (path, e)) from e
    for line in lines:
        if CONSUMER_LINE_RE.match(line):
            return line
    raise InputError("%s: no kafka-consumer-perf-test data line (tool failed?)" % path)


def tool_consumer_fields(line):
    m = CONSUMER_LINE_RE.match(line)
    return {k: float(m.group(k)) for k in ("mb", "mbps", "nmsg", "nmsgps", "rebalance_ms", "fetch_ms",
                                           "fetch_mbps", "fetch_nmsgps")}


# ------------------------------------------------------------------ comparing the two tools

def median_result(results):
    m = {k: statistics.median(r[k] for r in results) for k in FINAL_FIELDS}
    m["records"] = int(m["records"])
    m.update({k: statistics.median(r[k] for r in results)
              for k in ("p50_us", "p95_us", "p99_us", "p999_us") if all(k in r for r in results)})
    return m


def ratio(a, b):
    return a / b if b else float("inf")


def window_rps(line):
    return float(PRODUCER_WINDOW_RE.match(line).group("rps"))


def interval_stats(lines):
    """records/sec over interval lines: count, median, range and coefficient of variation."""
    v = [window_rps(line) for line in lines]
    if not v:
        return {"n": 0}
    mean = statistics.fmean(v)
    cv = statistics.pstdev(v) / mean if len(v) > 1 and mean > 0 else 0.0
    return {"n": len(v), "median": statistics.median(v), "min": min(v), "max": max(v), "cv": cv}


def interval_text(st):
    if not st["n"]:
        return "no complete interval"
    return "%d intervals, median %.1f records/sec (%.1f..%.1f), cv %.1f %%" % (
        st["n"], st["median"], st["min"], st["max"], 100.0 * st["cv"])


def comparison_lines(width, tool_rounds, kb_rounds, tool_windows, kb_windows, warmup):
    """The medians of both tools' final lines, their ratio, each round's records/sec and both
    tools' interval records/sec: lines for the console, and the same as a dict."""
    mt, mk = median_result(tool_rounds), median_result(kb_rounds)
    it, ik = interval_stats(tool_windows), interval_stats(kb_windows)
    lines = [
        "median of %d rounds each, interleaved (odd rounds Kafka's tool first), after %d warm-up "
        "records on both; per field:" % (len(tool_rounds), warmup),
        "%-*s  %s" % (width, "kafka-producer-perf-test", final_line(mt)),
        "%-*s  %s" % (width, "kbench Produce", final_line(mk)),
        "%-*s  records/sec x%.2f, MB/sec x%.2f, avg latency x%.2f, p99 x%.2f (kbench / perf-test; "
        "above 1 = kbench faster for records/sec, slower for latency)" % (
            width, "ratio", ratio(mk["rps"], mt["rps"]), ratio(mk["mbps"], mt["mbps"]),
            ratio(mk["avg_ms"], mt["avg_ms"]), ratio(mk["p99_ms"], mt["p99_ms"])),
        "%-*s  perf-test [%s], kbench [%s]" % (
            width, "records/sec per round", ", ".join("%.0f" % r["rps"] for r in tool_rounds),
            ", ".join("%.0f" % r["rps"] for r in kb_rounds)),
        "%-*s  perf-test: %s; kbench: %s%s" % (
            width, "interval records/sec", interval_text(it), interval_text(ik),
            "; medians x%.2f (kbench / perf-test)" % ratio(ik["median"], it["median"])
            if it["n"] and ik["n"] else ""),
    ]
    if len(tool_rounds) < 3 or len(kb_rounds) < 3:
        lines.append("%-*s  fewer than 3 rounds: the spread is unknown, no verdict" % (width, "note"))
    return lines, {"perf_test_median": mt, "kbench_median": mk, "perf_test_intervals": it,
                   "kbench_intervals": ik, "ratio_rps": ratio(mk["rps"], mt["rps"]),
                   "ratio_interval_median": ratio(ik["median"], it["median"])
                   if it["n"] and ik["n"] else None}


# ------------------------------------------------------------------ the runs' tables

def read_rows(path, columns):
    try:
        rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
    except OSError as e:
        raise InputError("%s: %s" % (path, e)) from e
    for row in rows:
        if len(row) != columns:
            raise InputError("%s: %r has %d columns, not %d" % (path, row, len(row), columns))
    return rows
