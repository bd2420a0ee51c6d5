#!/usr/bin/python3
"""kafka-producer-perf-test / kafka-consumer-perf-test output formats, for kbench results.

Used by scripts/vs-perf-test and scripts/scenarios/perf-test, so kbench's numbers read
line for line like Kafka's own tools (the seed-004 reports are written in that format).

Formats (Kafka's ProducerPerformance / ConsumerPerformance):
  interval  "N records sent, R.r records/sec (M.mm MB/sec), A.a ms avg latency, X.x ms max latency."
  final     "N records sent, R.rrrrrr records/sec (M.mm MB/sec), A.aa ms avg latency,
             X.xx ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
  consumer  "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
             rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
MB is MiB of record values, as the tools count it. The tools' percentiles are whole
milliseconds (their latencies are integer ms); kbench's microsecond values are truncated to
whole ms in the final line so the columns mean the same thing, and kept exact in JSON.

Subcommands (all read files written by the calling scripts):
  kbench-producer JSON [--stderr FILE] [--match REGEX]   interval lines + final line
  kbench-consumer JSON --end-ms MS [--match REGEX]      consumer header + one line per row
  vs DIR                                                 vs-perf-test summary (medians, ratio)
  scenario DIR                                           perf-test scenario: console, summary.json,
                                                         report.md, perf-test.png
"""

import argparse
import datetime
import json
import math
import os
import re
import statistics
import sys

MIB = 1024.0 * 1024.0

PRODUCER_FINAL_RE = re.compile(
    r"(?P<records>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mbps>[\d.]+) MB/sec\), "
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


def window_line(n, rps, mbps, avg_ms, max_ms):
    return ("%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency."
            % (n, rps, mbps, avg_ms, max_ms))


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
        raise InputError("%s: not readable kbench JSON (%s)" % (path, e))


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
    b = pick_rows(doc, path, match)[0]
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
        raise InputError("%s: %s" % (stderr_path, e))
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


def tool_producer(path):
    """The final line of a kafka-producer-perf-test output file, and its interval lines."""
    try:
        text = open(path, errors="replace").read()
    except OSError as e:
        raise InputError("%s: %s" % (path, e))
    finals = [m for m in PRODUCER_FINAL_RE.finditer(text)]
    if not finals:
        raise InputError("%s: no kafka-producer-perf-test final line (tool failed?)" % path)
    m = finals[-1]
    whole = ("records", "p50_ms", "p95_ms", "p99_ms", "p999_ms")
    r = {k: (int(m.group(k)) if k in whole else float(m.group(k))) for k in FINAL_FIELDS}
    r["windows"] = [line.strip() for line in text.splitlines() if PRODUCER_WINDOW_RE.match(line.strip())]
    return r


def tool_consumer(path):
    """The data line after kafka-consumer-perf-test's CSV header (warnings may precede it)."""
    try:
        lines = [line.strip() for line in open(path, errors="replace")]
    except OSError as e:
        raise InputError("%s: %s" % (path, e))
    for line in lines:
        m = CONSUMER_LINE_RE.match(line)
        if m:
            return line
    raise InputError("%s: no kafka-consumer-perf-test data line (tool failed?)" % path)


# ------------------------------------------------------------------ vs-perf-test

def median_result(results):
    m = {}
    for k in FINAL_FIELDS:
        m[k] = statistics.median(r[k] for r in results)
    m["records"] = int(m["records"])
    return m


def ratio(a, b):
    return a / b if b else float("inf")


def vs_summary(d):
    manifest = os.path.join(d, "rounds.tsv")
    try:
        rows = [line.rstrip("\n").split("\t") for line in open(manifest) if line.strip()]
    except OSError as e:
        raise InputError("%s: %s" % (manifest, e))
    tool, kb = [], []
    for kind, path in rows:
        (tool if kind == "perf-test" else kb).append(
            tool_producer(path) if kind == "perf-test" else kbench_producer(path))
    if not tool or not kb:
        raise InputError("%s: need at least one round of each tool" % manifest)
    mt, mk = median_result(tool), median_result(kb)
    width = len("kafka-producer-perf-test")
    print("median of %d rounds each (interleaved), per field:" % len(tool))
    print("%-*s  %s" % (width, "kafka-producer-perf-test", final_line(mt)))
    print("%-*s  %s" % (width, "kbench Produce", final_line(mk)))
    print("%-*s  records/sec x%.2f, MB/sec x%.2f, avg latency x%.2f, p99 x%.2f (kbench / perf-test; "
          "above 1 = kbench faster for records/sec, slower for latency)" % (
              width, "ratio", ratio(mk["rps"], mt["rps"]), ratio(mk["mbps"], mt["mbps"]),
              ratio(mk["avg_ms"], mt["avg_ms"]), ratio(mk["p99_ms"], mt["p99_ms"])))
    rps_t = ", ".join("%.0f" % r["rps"] for r in tool)
    rps_k = ", ".join("%.0f" % r["rps"] for r in kb)
    print("%-*s  perf-test [%s], kbench [%s]" % (width, "records/sec per round", rps_t, rps_k))
    summary = {"rounds": len(tool), "perf_test": {"median": mt, "rounds": [
        {k: r[k] for k in FINAL_FIELDS} for r in tool]},
        "kbench": {"median": mk, "rounds": [{k: r[k] for k in FINAL_FIELDS} for r in kb],
                   "name": kb[0]["name"], "context": kb[0]["context"]},
        "ratio_rps": ratio(mk["rps"], mt["rps"])}
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)


# ------------------------------------------------------------------ scenario

def read_kv(path):
    out = {}
    try:
        for line in open(path):
            k, sep, v = line.rstrip("\n").partition("=")
            if sep:
                out[k] = v
    except OSError as e:
        raise InputError("%s: %s" % (path, e))
    return out


def scenario(d):
    """Reads DIR/run.env (the run's settings) and DIR/cases.tsv (one line per case:
    name, records, record_size, throughput, kbench JSON, kbench stderr, tool output or -,
    consumer tool output or -), prints the lines, writes summary.json, report.md, the chart."""
    env = read_kv(os.path.join(d, "run.env"))
    cases = []
    try:
        rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(d, "cases.tsv")) if line.strip()]
    except OSError as e:
        raise InputError("%s: %s" % (os.path.join(d, "cases.tsv"), e))
    for name, records, size, tput, kjson, kerr, tool_out, cons_out in rows:
        c = {"case": name, "num_records": int(records), "record_size": int(size), "throughput": int(tput)}
        c["kbench"] = kbench_producer(kjson)
        c["kbench_windows"] = kbench_windows(kerr)
        if tool_out != "-":
            c["tool"] = tool_producer(tool_out)
        if cons_out != "-":
            c["tool_consumer"] = tool_consumer(cons_out)
        cases.append(c)
    consumers = []
    if env.get("consume_json"):
        consumers = kbench_consumers(env["consume_json"], float(env["consume_end_ms"]))

    lines = []
    for c in cases:
        lines.append("== %s: --num-records %d --record-size %d --throughput %d batch.size=%s acks=%s "
                     "(%s partitions, RF %s)" % (c["case"], c["num_records"], c["record_size"], c["throughput"],
                                                env.get("batch_size"), env.get("acks"), env.get("partitions"),
                                                env.get("replication")))
        lines.append("-- kbench Produce (%s)" % c["kbench"]["name"])
        lines.extend(c["kbench_windows"])
        lines.append(final_line(c["kbench"]))
        if schedule_lag(c):
            lines.append("   (cap not reached: kbench's latency counts from each record's intended send "
                         "time at %d records/sec, so it includes the lag behind that schedule)" % c["throughput"])
        if "tool" in c:
            lines.append("-- reference: Kafka's kafka-producer-perf-test, same settings")
            lines.extend(c["tool"]["windows"])
            lines.append(final_line(c["tool"]))
        if "tool_consumer" in c:
            lines.append("-- reference: Kafka's kafka-consumer-perf-test reading that topic (group, %d records)"
                         % c["num_records"])
            lines.append(CONSUMER_HEADER)
            lines.append(c["tool_consumer"])
    if consumers:
        lines.append("== consumer: kbench Consume/read (its own topic: %s records written once, "
                     "partitions assigned, no group)" % consumers[0]["nmsg"])
        for c in consumers:
            lines.append("-- %s" % c["name"])
            lines.append(CONSUMER_HEADER)
            lines.append(consumer_line(c))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(d, "console.txt"), "w") as f:
        f.write(text)

    def strip(r):
        return {k: v for k, v in r.items() if k not in ("context", "windows")}
    summary = {"scale": env.get("scale"), "settings": env, "cases": [
        {"case": c["case"], "num_records": c["num_records"], "record_size": c["record_size"],
         "throughput": c["throughput"], "kbench": strip(c["kbench"]),
         "kbench_final_line": final_line(c["kbench"]),
         "tool": strip(c["tool"]) if "tool" in c else None,
         "tool_consumer_line": c.get("tool_consumer")} for c in cases],
        "consumer": consumers, "context": cases[0]["kbench"]["context"] if cases else {}}
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    chart = draw_chart(d, cases)
    write_report(d, env, cases, consumers, text, chart, summary["context"])


def schedule_lag(c):
    """True when kbench ran well below the case's cap: its latency (from the intended send time
    of the rate schedule) then includes the growing lag, which kafka-producer-perf-test's
    throttle (it only sleeps when ahead) does not see."""
    return c["throughput"] > 0 and c["kbench"]["rps"] < 0.9 * c["throughput"]


def draw_chart(d, cases):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("perf-test: matplotlib missing (python3-matplotlib): no chart", file=sys.stderr)
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = ["%s\n%d B" % (c["case"], c["record_size"]) for c in cases]
    x = range(len(cases))
    have_tool = any("tool" in c for c in cases)
    w = 0.38 if have_tool else 0.6
    ax1.bar([i - (w / 2 if have_tool else 0) for i in x], [c["kbench"]["mbps"] for c in cases], w,
            label="kbench Produce")
    if have_tool:
        ax1.bar([i + w / 2 for i in x], [c["tool"]["mbps"] if "tool" in c else 0 for c in cases], w,
                label="kafka-producer-perf-test")
    ax1.set_xticks(list(x))
    ax1.set_xticklabels(labels)
    ax1.set_ylabel("MB/sec (MiB of values)")
    ax1.set_title("Producer throughput")
    ax1.legend()
    qs = ["p50", "p95", "p99", "p999"]
    for i, c in enumerate(cases):  # one colour per case: solid kbench, dashed the tool
        ax2.plot(qs + ["max"], [max(c["kbench"][q + "_us"] / 1000.0, 0.001) for q in qs] +
                 [max(c["kbench"]["max_ms"], 0.001)], marker="o", color="C%d" % i, label="kbench " + c["case"])
        if "tool" in c:
            ax2.plot(qs + ["max"], [max(c["tool"][q + "_ms"], 0.5) for q in qs] + [max(c["tool"]["max_ms"], 0.5)],
                     marker="x", linestyle="--", color="C%d" % i, label="perf-test " + c["case"])
    ax2.set_yscale("log")
    ax2.set_ylabel("latency, ms (log)")
    ax2.set_title("Producer latency quantiles")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(d, "perf-test.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return os.path.basename(path)


def write_report(d, env, cases, consumers, console, chart, ctx):
    s = []
    s.append("# Seed 004: producer and consumer stress test, reproduced with kbench\n")
    s.append("Scale **%s**; run %s; output of `%s`.\n" % (env.get("scale"), env.get("date"), env.get("command")))
    s.append("## Machine and versions\n")
    s.append("| | |\n|---|---|")
    for k, v in [("CPU", "%s, %s cores" % (env.get("cpu_model"), env.get("cores"))),
                 ("memory", env.get("memory")), ("kernel", ctx.get("kernel", env.get("kernel"))),
                 ("disk (Kafka data)", env.get("disk")), ("load", env.get("load")), ("Kafka broker", env.get("kafka_version")),
                 ("cluster", env.get("cluster")), ("Java", env.get("java_version")),
                 ("librdkafka", ctx.get("librdkafka_version")),
                 ("kbench", "%s (git %s%s)" % (ctx.get("kbench_version"), (ctx.get("git_sha") or "?")[:12],
                                               ", dirty" if ctx.get("git_dirty") == "true" else ""))]:
        s.append("| %s | %s |" % (k, v))
    s.append("")
    s.append("## What differs from the original setup\n")
    s.append("The seed ran Kafka (2018, ZooKeeper era) on 5 machines with 2 × 12-core Xeon E5-2678 v3, "
             "DDR4 (32 GB DIMMs) and Samsung 850 EVO SSDs in RAID 1, over a network, topic with 3 replicas and 15 partitions. Here:\n")
    s.append("- one host, %s cores, every broker and the clients on it, over loopback (no network cost, "
             "but clients and brokers share the CPUs);" % env.get("cores"))
    s.append("- %s;" % env.get("cluster"))
    s.append("- counts: %s (the seed: 10K, 10M, 100M);" % ", ".join(
        "%s %d" % (c["case"], c["num_records"]) for c in cases))
    s.append("- the client is librdkafka (kbench's Produce family, one send thread), not the Java producer; "
             "settings mapped: batch.size=%s, acks=%s (the seed's Java default then), linger.ms=%s (idem), "
             "buffer.memory 32 MiB as queue.buffering.max.kbytes=32768 (librdkafka's default queue is "
             "1 GiB, which would add queueing latency the Java client cannot have), no compression, "
             "A-Z payload, --throughput as kbench's `rate` schedule;"
             % (env.get("batch_size"), env.get("acks"), env.get("linger_ms")))
    s.append("- the seed's second case says `--num-records 1000000 --record-size 100` but reports 10,000,000 "
             "records at 224.59 MB/s, i.e. 2000-byte records; this run uses 100-byte records for it, as its "
             "command says;")
    s.append("- kbench's latency is measured from each record's intended send time when a rate is set "
             "(no coordinated omission), the tool's from the actual send(): under a cap the tool can look "
             "better while the producer falls behind;")
    s.append("- the consumer line comes from kbench's Consume family, which reads its own topic "
             "(%s records per size, 4 partitions, RF 1, partitions assigned so rebalance.time.ms is 0); "
             "its start/end times bracket the timed reads. The seed's consumer used ZooKeeper and "
             "`--threads 1`." % (consumers[0]["nmsg"] if consumers else "no"))
    s.append("")
    s.append("## Results\n")
    s.append("One run per case and client (the seed's shape), on a shared machine: see the load "
             "averages above. For a fair kbench-vs-tool comparison use `scripts/vs-perf-test`, which "
             "interleaves rounds and reports medians.\n")
    s.append("| case | client | records | records/sec | MB/sec | avg ms | max ms | p50 | p95 | p99 | p99.9 |")
    s.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in cases:
        for who, r in [("kbench", c["kbench"]), ("kafka-producer-perf-test", c.get("tool"))]:
            if r is None:
                continue
            lag = " (schedule lag)" if who == "kbench" and schedule_lag(c) else ""
            s.append("| %s | %s | %d | %.1f | %.2f | %.2f | %.2f | %d | %d | %d | %d |" % (
                c["case"], who + lag, r["records"], r["rps"], r["mbps"], r["avg_ms"], r["max_ms"],
                r["p50_ms"], r["p95_ms"], r["p99_ms"], r["p999_ms"]))
    s.append("")
    if any(schedule_lag(c) for c in cases):
        s.append("*(schedule lag)*: the cap was not reached, so kbench's latencies include the lag behind "
                 "the rate schedule (records/sec is unaffected); the tool's throttle only sleeps when ahead "
                 "and measures from the actual send, so its latencies are not comparable there.\n")
    if consumers:
        s.append("| consumer (kbench) | MB | MB.sec | nMsg | nMsg.sec |\n|---|---|---|---|---|")
        for c in consumers:
            s.append("| %s | %.4f | %.4f | %d | %.4f |" % (c["name"], c["mb"], c["mbps"], c["nmsg"], c["nmsgps"]))
        s.append("")
    if chart:
        s.append("![throughput and latency](%s)\n" % chart)
    s.append("## Output, in the tools' format\n")
    s.append("```\n" + console + "```\n")
    s.append("Files: `kbench-produce-*.json` (Google Benchmark JSON, full run context), "
             "`kbench-produce-*.err` (progress lines), `kafka-*-perf-*.txt` (Kafka's tools), "
             "`summary.json`.\n")
    with open(os.path.join(d, "report.md"), "w") as f:
        f.write("\n".join(s))


# ------------------------------------------------------------------ main

def main(argv):
    ap = argparse.ArgumentParser(prog="perf_test_format.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("kbench-producer")
    p.add_argument("json")
    p.add_argument("--stderr")
    p.add_argument("--match", default=r"^Produce/")
    p = sub.add_parser("kbench-consumer")
    p.add_argument("json")
    p.add_argument("--end-ms", type=float, required=True)
    p.add_argument("--match", default=r"^Consume/")
    p = sub.add_parser("vs")
    p.add_argument("dir")
    p = sub.add_parser("scenario")
    p.add_argument("dir")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "kbench-producer":
            if a.stderr:
                for line in kbench_windows(a.stderr, a.match):
                    print(line)
            print(final_line(kbench_producer(a.json, a.match)))
        elif a.cmd == "kbench-consumer":
            print(CONSUMER_HEADER)
            for c in kbench_consumers(a.json, a.end_ms, a.match):
                print(consumer_line(c))
        elif a.cmd == "vs":
            vs_summary(a.dir)
        else:
            scenario(a.dir)
    except InputError as e:
        print("perf_test_format: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
