"""Report of the perf-test scenario (seed 004), `report.py DIR`: per case and round both
tools' lines in Kafka's tools' formats, the medians with their ratio, report.md,
summary.json and perf-test.png.

The formats (Kafka's ProducerPerformance / ConsumerPerformance) are the regexes below; a
"steady state" final line follows the final line when the tool had --warmup-records. MB is
MiB of record values. The tools' percentiles are whole ms: kbench's are truncated to whole
ms in the final line, and kept exact in JSON.
"""

import datetime
import itertools
import json
import math
import os
import pathlib
import re
import statistics
import sys

from kbench import facts, text
from kbench import results as kr
from kbench import scenario as ks
from kbench.cli import ArgumentParser, die

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


def final_line(r):
    return ("%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, "
            "%d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th." %
            (r["records"], r["rps"], r["mbps"], r["avg_ms"], r["max_ms"],
             int(r["p50_ms"]), int(r["p95_ms"]), int(r["p99_ms"]), int(r["p999_ms"])))


def perf_time(ms):
    """ConsumerPerformance's date format, yyyy-MM-dd HH:mm:ss:SSS (local time)."""
    return datetime.datetime.fromtimestamp(ms / 1000.0).strftime("%Y-%m-%d %H:%M:%S:") + "%03d" % (int(ms) % 1000)


def consumer_line(c):
    return "%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f" % (
        perf_time(c["start_ms"]), perf_time(c["end_ms"]), c["mb"], c["mbps"], c["nmsg"], c["nmsgps"],
        c["rebalance_ms"], c["fetch_ms"], c["fetch_mbps"], c["fetch_nmsgps"])


def read(path):
    try:
        return pathlib.Path(path).read_text(errors="replace")
    except OSError as e:
        raise InputError("%s: %s" % (path, e)) from e


def load_json(path):
    try:
        return json.loads(read(path))
    except ValueError as e:
        raise InputError("%s: not readable JSON (%s)" % (path, e)) from e


def seconds(bench):
    """The wall time of all of a row's iterations."""
    return bench["real_time"] * kr.TIME_UNIT_NS[bench.get("time_unit", "ns")] / 1e9 * bench["iterations"]


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
    lat = facts.latency()
    for q in [lat["max"]] + lat["quantiles"] + [{"metric": "avg_us", "queue_metric": "queue_avg_us"}]:
        if q["metric"] not in b and q["queue_metric"] in b:
            b[q["metric"]] = b[q["queue_metric"]]
    for key in ("items_per_second", "bytes_per_second", "avg_us", "max_us", "p50_us"):
        if key not in b:
            raise InputError("%s: %s has no %s counter (kbench too old?)" % (path, b["name"], key))
    secs = seconds(b)
    r = {"name": b["name"], "records": int(round(b["items_per_second"] * secs)), "rps": b["items_per_second"],
         "mbps": b["bytes_per_second"] / ks.MIB, "avg_ms": b["avg_us"] / 1000.0, "max_ms": b["max_us"] / 1000.0,
         "seconds": secs, "context": doc.get("context", {})}
    for q in ("p50", "p95", "p99", "p999"):
        r[q + "_us"] = b[q + "_us"]
        r[q + "_ms"] = math.floor(b[q + "_us"] / 1000.0)  # whole ms, as the tool reports
    return r


def kbench_windows(stderr_path, label_match=r"^Produce/"):
    """kbench's progress lines of the matching benchmark, without their label prefix."""
    parts = (line.partition(": ") for line in read(stderr_path).splitlines())
    return [rest.replace(" (final)", "") for label, sep, rest in parts
            if sep and re.search(label_match, label) and "(fill)" not in label and PRODUCER_WINDOW_RE.match(rest)]


def kbench_consumers(path, end_ms, match=r"^Consume/"):
    """Consumer-line fields of each Consume row (no group: no rebalance, fetch.* are the totals),
    its timed reads placed to end when the kbench process ended (END_MS)."""
    out = []
    for b in reversed(pick_rows(load_json(path), path, match)):  # rows ran in order: walk back from the end
        secs, mbps = seconds(b), b["bytes_per_second"] / ks.MIB
        out.insert(0, {"name": b["name"], "start_ms": end_ms - secs * 1000.0, "end_ms": end_ms,
                       "mb": b["bytes_per_second"] * secs / ks.MIB,
                       "mbps": mbps, "nmsg": int(round(b["items_per_second"] * secs)), "nmsgps": b["items_per_second"],
                       "rebalance_ms": 0, "fetch_ms": int(round(secs * 1000.0)),
                       "fetch_mbps": mbps, "fetch_nmsgps": b["items_per_second"]})
        end_ms = out[0]["start_ms"]
    return out


def tool_producer(path, warmup=0):
    """kafka-producer-perf-test's steady-state line (after --warmup-records, as kbench measures),
    else its final line; and its interval lines that hold no warm-up record."""
    text = read(path)
    finals = list(PRODUCER_FINAL_RE.finditer(text))
    if not finals:
        raise InputError("%s: no kafka-producer-perf-test final line (tool failed?)" % path)
    steady = [m for m in finals if m.group("steady")]
    if warmup > 0 and not steady:
        raise InputError("%s: no steady-state line although the tool had %d warm-up records" % (path, warmup))
    m = steady[-1] if steady else finals[-1]
    whole = ("records", "p50_ms", "p95_ms", "p99_ms", "p999_ms")
    r = {k: (int(m.group(k)) if k in whole else float(m.group(k))) for k in FINAL_FIELDS}
    r["steady_state"] = bool(steady)
    windows = [line.strip() for line in text.splitlines() if PRODUCER_WINDOW_RE.match(line.strip())]
    sent_before = itertools.accumulate((int(PRODUCER_WINDOW_RE.match(w).group("records")) for w in windows), initial=0)
    r["windows"] = [w for w, before in zip(windows, sent_before) if before >= warmup]
    return r


def tool_consumer(path):
    """The data line after kafka-consumer-perf-test's CSV header (warnings may precede it)."""
    for line in read(path).splitlines():
        if CONSUMER_LINE_RE.match(line.strip()):
            return line.strip()
    raise InputError("%s: no kafka-consumer-perf-test data line (tool failed?)" % path)


def tool_consumer_fields(line):
    return {k: float(v) for k, v in CONSUMER_LINE_RE.match(line).groupdict().items() if k not in ("start", "end")}


def median_result(results):
    m = {k: statistics.median(r[k] for r in results) for k in FINAL_FIELDS}
    m["records"] = int(m["records"])
    m.update({k: statistics.median(r[k] for r in results)
              for k in (q["metric"] for q in facts.latency()["quantiles"])
              if all(k in r for r in results)})
    return m


def ratio(a, b):
    return a / b if b else float("inf")


def interval_stats(lines):
    """records/sec over interval lines: count, median, range and coefficient of variation."""
    v = [float(PRODUCER_WINDOW_RE.match(line).group("rps")) for line in lines]
    if not v:
        return {"n": 0}
    mean = statistics.fmean(v)
    cv = statistics.pstdev(v) / mean if len(v) > 1 and mean > 0 else 0.0
    return {"n": len(v), "median": statistics.median(v), "min": min(v), "max": max(v), "cv": cv}


def interval_text(st):
    return ("%d intervals, median %.1f records/sec (%.1f..%.1f), cv %.1f %%" % (
        st["n"], st["median"], st["min"], st["max"], 100.0 * st["cv"]) if st["n"] else "no complete interval")


def comparison_lines(width, tool_rounds, kb_rounds, tool_windows, kb_windows, warmup):
    """Both tools' median final lines, ratios, records/sec per round and per interval: console lines, a dict."""
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


def load_cases(d):
    """DIR/run.json's settings and cases, each with its rounds read from their outputs."""
    run = load_json(os.path.join(d, "run.json"))
    cases = {c["name"]: {"case": c["name"], "num_records": c["records"], "record_size": c["size"],
                         "throughput": c["tput"], "warmup": c["warm"], "queue_messages": c["qmsgs"],
                         "rounds": {}} for c in run["cases"]}
    for step in run["rounds"]:
        c, kind, path, aux = cases[step["case"]], step["kind"], step["path"], step["aux"]
        r = c["rounds"].setdefault(step["round"], {"round": step["round"], "first": step["first"]})
        if kind == "kbench-produce":
            r.update(kbench=kbench_producer(path), kbench_windows=kbench_windows(aux))
        elif kind == "tool-produce":
            r["tool"] = tool_producer(path, c["warmup"])
        elif kind == "tool-consume":
            r["tool_consumer"] = tool_consumer(path)
        else:
            r["kbench_consumer"] = kbench_consumers(path, float(aux))[0]
    for c in cases.values():
        c["rounds"] = [c["rounds"][k] for k in sorted(c["rounds"])]
        if not c["rounds"] or any("kbench" not in r for r in c["rounds"]):
            raise InputError("%s: case %s lacks kbench's Produce rounds" % (d, c["case"]))
    return run["settings"], list(cases.values())


def summarize_case(c):
    """Medians over rounds, per tool, and the interval statistics; sets c's summary keys."""
    rounds = c["rounds"]
    c["kbench"] = dict(median_result([r["kbench"] for r in rounds]), name=rounds[0]["kbench"]["name"],
                       rps_rounds=[r["kbench"]["rps"] for r in rounds])
    c["kbench_intervals"] = interval_stats([w for r in rounds for w in r["kbench_windows"]])
    tools = [r["tool"] for r in rounds if "tool" in r]
    if tools:
        c["tool"] = dict(median_result(tools), rps_rounds=[t["rps"] for t in tools])
        c["tool_intervals"] = interval_stats([w for t in tools for w in t["windows"]])
    # The tool's fetch.*: without the group rebalance, which kbench (partitions assigned) never has.
    for key, prefix, parse in (("kbench_consumer", "", dict), ("tool_consumer", "fetch_", tool_consumer_fields)):
        xs = [parse(r[key]) for r in rounds if key in r]
        if xs:
            c[key] = {"nmsgps": statistics.median(x[prefix + "nmsgps"] for x in xs),
                      "mbps": statistics.median(x[prefix + "mbps"] for x in xs),
                      "nmsgps_rounds": [x[prefix + "nmsgps"] for x in xs], "nmsg": int(xs[0]["nmsg"])}


def case_lines(c, env):
    width = len("kafka-producer-perf-test")
    lines = ["== %s: --num-records %d (after %d warm-up) --record-size %d --throughput %d "
             "batch.size=%s acks=%s (%s partitions, RF %s), %d round(s)" % (
                 c["case"], c["num_records"], c["warmup"], c["record_size"], c["throughput"],
                 env.get("batch_size"), env.get("acks"), env.get("partitions"),
                 env.get("replication"), len(c["rounds"]))]
    for r in c["rounds"]:
        lines.append("-- round %d (%s first)" % (r["round"], "Kafka's tools" if r["first"] == "tool" else "kbench"))
        lines += ["kbench Produce (%s):" % r["kbench"]["name"]] + r["kbench_windows"] + [final_line(r["kbench"])]
        if schedule_lag(c, r["kbench"]):
            lines.append("   (cap not reached: kbench's latency counts from each record's intended "
                         "send time at %d records/sec, so it includes the lag behind that schedule)"
                         % c["throughput"])
        if "tool" in r:
            lines += (["kafka-producer-perf-test (steady state, after its %d warm-up records):" % c["warmup"]]
                      + r["tool"]["windows"] + [final_line(r["tool"])])
    if "tool" in c:
        tools = [r["tool"] for r in c["rounds"] if "tool" in r]
        more, _ = comparison_lines(width, tools, [r["kbench"] for r in c["rounds"]],
                                   [w for t in tools for w in t["windows"]],
                                   [w for r in c["rounds"] for w in r["kbench_windows"]], c["warmup"])
        lines += ["-- " + more[0]] + more[1:]
    else:
        lines.append("-- kbench over %d round(s): records/sec [%s]; interval records/sec: %s" % (
            len(c["rounds"]), ", ".join("%.0f" % x for x in c["kbench"]["rps_rounds"]),
            interval_text(c["kbench_intervals"])))
    if any("kbench_consumer" in r or "tool_consumer" in r for r in c["rounds"]):
        same = "tool_consumer" in c
        lines += ["-- consumers: %s (%d records)%s" % (
            "both read the topic kafka-producer-perf-test wrote" if same else
            "kbench Consume/read on its own topic of this layout", c["num_records"] + c["warmup"],
            ", same fetch settings" if same else ""), CONSUMER_HEADER]
        for r in c["rounds"]:
            if "tool_consumer" in r:
                lines += ["round %d kafka-consumer-perf-test:" % r["round"], r["tool_consumer"]]
            if "kbench_consumer" in r:
                lines += ["round %d kbench Consume (%s):" % (r["round"], r["kbench_consumer"]["name"]),
                          consumer_line(r["kbench_consumer"])]
        if same and "kbench_consumer" in c:
            kc, tc = c["kbench_consumer"], c["tool_consumer"]
            lines.append("%-*s  kafka-consumer-perf-test %.1f (fetch.nMsg.sec: without its group "
                         "rebalance), kbench %.1f: x%.2f (kbench / tool)" % (
                             width, "median nMsg.sec", tc["nmsgps"], kc["nmsgps"],
                             ratio(kc["nmsgps"], tc["nmsgps"])))
    return lines


def scenario(d):
    """DIR/run.json's rounds and medians, printed and in console.txt, summary.json, report.md, the chart."""
    env, cases = load_cases(d)
    for c in cases:
        summarize_case(c)
    console = "".join(line + "\n" for c in cases for line in case_lines(c, env))
    sys.stdout.write(console)
    pathlib.Path(d, "console.txt").write_text(console)

    def strip(r):
        return {k: v for k, v in r.items() if k not in ("context", "windows")}

    def round_summary(r):
        out = {"round": r["round"], "first": r["first"], "kbench": strip(r["kbench"]),
               "kbench_final_line": final_line(r["kbench"]), "kbench_windows": r["kbench_windows"]}
        if "tool" in r:
            out.update(tool=strip(r["tool"]), tool_final_line=final_line(r["tool"]), tool_windows=r["tool"]["windows"])
        out.update({new: r[key] for key, new in (("tool_consumer", "tool_consumer_line"),
                                                  ("kbench_consumer", "kbench_consumer")) if key in r})
        return out
    context = cases[0]["rounds"][0]["kbench"]["context"] if cases else {}
    summary = {"scale": env.get("scale"), "settings": env, "cases": [
        {"case": c["case"], "num_records": c["num_records"], "warmup_records": c["warmup"],
         "record_size": c["record_size"], "throughput": c["throughput"],
         "queue_buffering_max_messages": c["queue_messages"],
         "kbench": c["kbench"], "kbench_intervals": c["kbench_intervals"],
         "tool": c.get("tool"), "tool_intervals": c.get("tool_intervals"),
         "kbench_consumer": c.get("kbench_consumer"), "tool_consumer": c.get("tool_consumer"),
         "rounds": [round_summary(r) for r in c["rounds"]]} for c in cases],
        "context": context}
    pathlib.Path(d, "summary.json").write_text(json.dumps(summary, indent=2))
    draw_chart(d, cases)
    write_report(d, env, cases, console, context)


def schedule_lag(c, r):
    """kbench ran well below the case's cap: its latency (from each record's intended send time)
    includes the lag behind the schedule, which the tool's throttle does not see."""
    return c["throughput"] > 0 and r["rps"] < 0.9 * c["throughput"]


def draw_chart(d, cases):
    plt = ks.plt_module()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = ["%s\n%d B" % (c["case"], c["record_size"]) for c in cases]

    def mb_rounds(r):
        """MB/sec of each round, from its records/sec (the median's MB per record)."""
        return ks.Spread.of([v * r["mbps"] / r["rps"] for v in r["rps_rounds"]] if r["rps"] else [0])
    # Median over rounds, whiskers from the slowest to the fastest round.
    ks.grouped_bars(ax1, [(label, [(i, mb_rounds(c[key])) for i, c in enumerate(cases) if key in c], {})
                          for key, label in (("kbench", "kbench Produce"), ("tool", "kafka-producer-perf-test"))
                          if any(key in c for c in cases)])
    ax1.set(xticks=list(range(len(cases))), xticklabels=labels, title="Producer throughput",
            ylabel="MB/sec (MiB of values), median and range of rounds")
    ax1.legend()
    qs = ["p50", "p95", "p99", "p999"]
    for i, c in enumerate(cases):  # one colour per case: solid kbench, dashed the tool
        k = c["kbench"]
        ax2.plot(qs + ["max"], [max(k.get(q + "_us", k[q + "_ms"] * 1000.0) / 1000.0, 0.001) for q in qs] +
                 [max(k["max_ms"], 0.001)], marker="o", color="C%d" % i, label="kbench " + c["case"])
        if "tool" in c:
            t = c["tool"]
            ax2.plot(qs + ["max"], [max(t[q + "_ms"], 0.5) for q in qs] + [max(t["max_ms"], 0.5)],
                     marker="x", linestyle="--", color="C%d" % i, label="perf-test " + c["case"])
    ax2.set(yscale="log", ylabel="latency, ms (log), median of rounds", title="Producer latency quantiles")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    ks.save_chart(fig, d, "perf-test.png")


def spread(values, fmt="%.1f"):
    return (fmt + " (" + fmt + "–" + fmt + ")") % (statistics.median(values), min(values), max(values))


def write_report(d, env, cases, console, ctx):
    machine = [("CPU", "%s, %s cores" % (ctx.get("cpu_model"), ctx.get("num_cpus"))),
               ("memory", env.get("memory")), ("kernel", ctx.get("kernel")),
               ("disk (Kafka data)", env.get("disk")), ("load", env.get("load")),
               ("Kafka broker", env.get("kafka_version")),
               ("cluster", env.get("cluster")), ("Java", env.get("java_version")),
               ("librdkafka", ctx.get("librdkafka_version")),
               ("kbench", "%s (git %s%s)" % (ctx.get("kbench_version"), (ctx.get("git_sha") or "?")[:12],
                                             ", dirty" if ctx.get("git_dirty") == "true" else ""))]
    s = ["# Seed 004: producer and consumer stress test, reproduced with kbench\n",
         "Scale **%s**; run %s; output of `%s`.\n" % (env.get("scale"), env.get("date"), env.get("command")),
         "## Machine and versions\n", text.table(["", ""], machine, markdown=True), "",
         "## What differs from the original setup\n",
         "The seed ran Kafka (2018, ZooKeeper era) on 5 machines with 2 × 12-core Xeon E5-2678 v3, "
         "DDR4 (32 GB DIMMs) and Samsung 850 EVO SSDs in RAID 1, over a network, topic with 3 replicas "
         "and 15 partitions. Here:\n",
         "- one host, %s cores, every broker and the clients on it, over loopback (no network cost, "
         "but clients and brokers share the CPUs);" % ctx.get("num_cpus"),
         "- %s;" % env.get("cluster"),
         "- measured records per round: %s, each after a warm-up of a tenth as many on both "
         "clients (the seed: 10K, 10M, 100M, no warm-up; its 10K case lasted one second, so "
         "the small and full scales measure 10 s at its cap instead);" % ", ".join(
             "%s %d" % (c["case"], c["num_records"]) for c in cases),
         "- %s round(s) per case, interleaved: odd rounds start with Kafka's tools, even ones "
         "with kbench; medians and the range over rounds are reported, and no ordering is "
         "claimed between two clients whose ranges overlap;" % env.get("rounds"),
         "- the client is librdkafka (kbench's Produce family, one send thread), not the Java producer; settings "
         "mapped: batch.size=%s, acks=%s (the seed's Java default then), linger.ms=%s (idem), the Java client's "
         "buffer.memory (%s bytes) as librdkafka's caps in bytes (queue.buffering.max.kbytes) and in messages "
         "(queue.buffering.max.messages = buffer.memory / record size: %s; librdkafka's default of 100,000 messages "
         "would bind first for small records), no compression, A-Z payload, --throughput as kbench's `rate` "
         "schedule;" % (env.get("batch_size"), env.get("acks"), env.get("linger_ms"),
                               env.get("buffer_bytes"), ", ".join(
                                   "%s %d" % (c["case"], c["queue_messages"]) for c in cases)),
         "- the seed's second case says `--num-records 1000000 --record-size 100` but reports 10,000,000 records at "
         "224.59 MB/s, i.e. 2000-byte records; this run uses 100-byte records for it, as its command says;",
         "- kbench's latency is measured from each record's intended send time when a rate is set "
         "(no coordinated omission), the tool's from the actual send(): under a cap the tool can look "
         "better while the producer falls behind;"]
    if env.get("tools"):
        s.append("- consumers: in every round kafka-consumer-perf-test and kbench's Consume family (`--consume "
                 "topic=T`, partitions assigned, no group) read the same topic, the one kafka-producer-perf-test "
                 "wrote, with fetch.max.wait.ms=10 on both; the tool's fetch.nMsg.sec (which leaves out its group "
                 "rebalance) is compared. The seed's consumer used ZooKeeper and `--threads 1`.")
    else:
        s.append("- Kafka's tools did not run (--no-kafka-tools, or --tiny): kbench's Consume "
                 "family read its own topic of each case's layout and size.")
    s += ["",
          "## Results\n",
          "Medians over rounds, with the slowest and fastest round in parentheses; interval "
          "records/sec are the tools' 5-second lines after the warm-up (cv: their coefficient "
          "of variation). On a shared machine: see the load averages above.\n"]
    rows = []
    for c in cases:
        for who, r, iv in [("kbench", c["kbench"], c["kbench_intervals"]),
                           ("kafka-producer-perf-test", c.get("tool"), c.get("tool_intervals"))]:
            if r is not None:
                lag = " (schedule lag)" if who == "kbench" and schedule_lag(c, r) else ""
                rows.append([c["case"], who + lag, len(r["rps_rounds"]), spread(r["rps_rounds"]),
                             "%.2f" % r["mbps"], "%.2f" % r["avg_ms"], r["p50_ms"], r["p99_ms"], r["p999_ms"],
                             "%.1f, %.1f %%" % (iv["median"], 100 * iv["cv"]) if iv and iv["n"] else "none"])
    s += [text.table(["case", "client", "rounds", "records/sec", "MB/sec", "avg ms", "p50", "p99", "p99.9",
                      "intervals: median records/sec, cv"], rows, markdown=True), ""]
    if any(schedule_lag(c, c["kbench"]) for c in cases):
        s.append("*(schedule lag)*: the cap was not reached, so kbench's latencies include the lag behind "
                 "the rate schedule (records/sec is unaffected); the tool's throttle only sleeps when ahead "
                 "and measures from the actual send, so its latencies are not comparable there.\n")
    if any("kbench_consumer" in c for c in cases):
        rows = [[c["case"], who, len(r["nmsgps_rounds"]), spread(r["nmsgps_rounds"]), "%.4f" % r["mbps"]]
                for c in cases for who, r in [("kbench Consume", c.get("kbench_consumer")),
                                              ("kafka-consumer-perf-test (fetch.*)", c.get("tool_consumer"))] if r]
        s += [text.table(["case", "consumer", "rounds", "nMsg.sec", "MB.sec"], rows, markdown=True), ""]
    s += ["![throughput and latency](perf-test.png)\n",
          "## Output, in the tools' format\n",
          "```\n" + console + "```\n",
          "Files: `rounds/<case>-r<N>-kbench-produce.json` and `.err` (Google Benchmark JSON with "
          "the full run context; progress lines), `rounds/<case>-r<N>-tool-*.txt` (Kafka's tools), "
          "`rounds/<case>-r<N>-kbench-consume.json`, `summary.json`, `commands.txt`.\n"]
    ks.write_report(d, s)


def main(argv):
    ap = ArgumentParser(prog="report.py", description="Write DIR/report.md, summary.json and the chart.")
    ap.add_argument("dir")
    args = ap.parse_args(argv)
    try:
        scenario(args.dir)
    except InputError as e:
        die(e, status=1)  # the runs' output, not the usage, is at fault
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
