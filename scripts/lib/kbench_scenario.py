#!/usr/bin/python3
"""Reports, charts and JSON chores of the scripts/scenarios/* experiments.

Subcommands (each scenario script calls its own; see docs/scenarios.md):
  context JSON KEY                       print one run-context value
  sum OUT.json IN.json...                one entry per benchmark whose rates are the sum
                                         of concurrent processes' medians
  merge OUT.json IN.json...              concatenate runs (repetitions renumbered)
  report SCENARIO DIR --scale S [--tiny] [--wall-seconds N] [--note TEXT]...
                                         write DIR/report.md and DIR/*.png

Reports put the machine, the versions and what differs from the original setup first,
so that a scaled run on one small host is never read as the original's numbers.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

import kbench_results as kr  # noqa: E402
from kbench_cli import ArgumentParser, die  # noqa: E402

MIB = 1024.0 * 1024.0


class ScenarioError(Exception):
    """User-facing failure: one line, exit 2."""


# ------------------------------------------------------------------ JSON chores

def cmd_context(path, key):
    ctx = kr.load(path).get("context", {})
    if key not in ctx:
        raise ScenarioError("%s: context has no %r" % (path, key))
    print(ctx[key])


SUMMED = ("items_per_second", "bytes_per_second", "wire_bytes_per_second",
          "requests_per_second", "errors", "retries", "delivered_records")


def sum_processes(datas, sources):
    """Rates of N processes that ran the same benchmarks at the same time, added up.

    Each process's median over its repetitions is taken first, then the medians are
    summed: the processes are not synchronised per repetition, only per run. Latency
    is the worst process's median (what a user of the slowest process saw).
    """
    per_name = {}
    order = []
    for data in datas:
        for name, g in kr.group_runs(data).items():
            if g["errors"] and not g["runs"]:
                raise ScenarioError("%s failed in one of the processes: %s" % (name, g["errors"][0]))
            m = kr.median_metrics(g)
            if name not in per_name:
                order.append(name)
                per_name[name] = []
            per_name[name].append(m)
    benches = []
    for name in order:
        ms = per_name[name]
        if len(ms) != len(datas):
            raise ScenarioError("%s ran in %d of %d processes" % (name, len(ms), len(datas)))
        e = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1,
             "repetition_index": 0, "threads": 1, "iterations": 1, "time_unit": "ns",
             "real_time": max(m.get("real_time", 0.0) for m in ms),
             "cpu_time": sum(m.get("cpu_time", 0.0) for m in ms),
             "processes": float(len(ms))}
        for key in SUMMED:
            if all(key in m for m in ms):
                e[key] = sum(m[key] for m in ms)
        for key in kr.LATENCY_METRICS:
            if all(key in m for m in ms):
                e[key] = max(m[key] for m in ms)
        for key in ("avg_batch_bytes", "records_per_batch", "ratio"):
            if all(key in m for m in ms):
                e[key] = sum(m[key] for m in ms) / len(ms)
        benches.append(e)
    ctx = dict(datas[0].get("context", {}))
    ctx["kbench_concurrent_processes"] = len(datas)
    ctx["kbench_summed_from"] = ",".join(os.path.basename(s) for s in sources)
    return {"context": ctx, "benchmarks": benches}


def merge_files(datas, sources):
    merged = kr.merge_runs(datas, sources)
    # A merge of summed files keeps the marker that says they are sums.
    for d in datas:
        if "kbench_concurrent_processes" in d.get("context", {}):
            merged["context"]["kbench_concurrent_processes"] = d["context"]["kbench_concurrent_processes"]
    return merged


# ------------------------------------------------------------------ shared report parts

def load_dir_json(directory, filename):
    path = os.path.join(directory, filename)
    if not os.path.exists(path):
        raise ScenarioError("%s does not exist (did the runs finish?)" % path)
    return kr.load(path)


def median_table(data):
    """name -> (params dict, median metrics); errored benchmarks raise."""
    out = {}
    for name, g in kr.group_runs(data).items():
        if not g["runs"] and g["errors"]:
            raise ScenarioError("benchmark %s failed: %s" % (name, g["errors"][0]))
        out[name] = (kr.parse_name(name)[2], kr.median_metrics(g))
    return out


def fmt_k(v):
    """Records/s the way the seeds write them: 869K, 1.05M."""
    if v is None:
        return "—"
    if v >= 1e6:
        return "%.2fM" % (v / 1e6)
    if v >= 1e3:
        return "%.0fK" % (v / 1e3) if v >= 1e4 else "%.1fK" % (v / 1e3)
    return "%.0f" % v


def fmt_int(v):
    return "—" if v is None else "{:,.0f}".format(v)


def fmt_mb(v):
    if v is None:
        return "—"
    return "%.0f" % v if v >= 100 else ("%.1f" % v if v >= 10 else "%.2f" % v)


def header(title, original, ctx, scale, tiny, wall, notes, differences):
    lines = ["# %s" % title, "",
             "Reproduces: %s" % original, ""]
    scale_text = "tiny (CI: proves the pipeline, numbers are not meaningful)" if tiny else scale
    lines += ["## Setup of this run", "",
              "| | |", "|---|---|",
              "| scale | %s |" % scale_text,
              "| machine | %s, %s cores, %s MHz, kernel %s, host %s |" % (
                  ctx.get("cpu_model", "?"), ctx.get("num_cpus", "?"), ctx.get("mhz_per_cpu", "?"),
                  ctx.get("kernel", "?"), ctx.get("host_name", "?")),
              "| kbench | %s, git %s%s, %s build, %s |" % (
                  ctx.get("kbench_version", "?"), str(ctx.get("git_sha", "?"))[:12],
                  " (dirty)" if ctx.get("git_dirty") == "true" else "",
                  ctx.get("build_type", "?"), ctx.get("compiler", "?")),
              "| librdkafka | %s |" % ctx.get("librdkafka_version", "?"),
              "| broker | Kafka %s, %s broker(s), target %s, bootstrap %s |" % (
                  ctx.get("broker_version", "?"), ctx.get("broker_count", "?"),
                  ctx.get("target", "?"), ctx.get("bootstrap", "") or "—"),
              "| codecs | zlib %s, zstd %s, lz4 %s, snappy %s |" % (
                  ctx.get("zlib_version", "?"), ctx.get("zstd_version", "?"),
                  ctx.get("lz4_version", "?"), ctx.get("snappy_version", "?")),
              "| started | %s |" % ctx.get("date", "?")]
    if wall is not None:
        lines.append("| wall time | %d s |" % wall)
    lines += ["", "**Not the original setup.** %s" % differences[0], ""]
    lines += ["- %s" % d for d in differences[1:]]
    lines += ["- %s" % n for n in notes]
    lines.append("")
    return lines


def common_differences(ctx, extra):
    cores = ctx.get("num_cpus", "?")
    return ["Client, broker(s) and every replica share one host with %s cores and talk over "
            "loopback; absolute numbers are this machine's, only the shape (which setting "
            "wins, by roughly how much) is comparable with the original." % cores] + extra


def plt_module():
    import matplotlib
    matplotlib.use("Agg")  # files only; CI machines have no display
    import matplotlib.pyplot as plt
    return plt


# ------------------------------------------------------------------ producer-sharing (seed 000)

# Columns of the seed's table: how many threads share one producer.
SHARING = [("all", "1 producer shared by all"), ("8", "8 threads per producer"),
           ("4", "4 threads per producer"), ("2", "2 threads per producer"),
           ("1", "one producer per thread")]

# Garry Turkington's numbers (records/s, 5 brokers 0.8.2.1, 24-core client, 10 GbE):
# threads -> {threads per producer: records/s}.
SEED000 = {4: {"all": 332e3, "2": 333e3, "1": 310e3},
           8: {"all": 387e3, "4": 609e3, "2": 628e3, "1": 527e3},
           16: {"all": 380e3, "8": 675e3, "4": 869e3, "2": 733e3, "1": 491e3}}


def sharing_key(threads, producers):
    if producers == 1:
        return "all"
    if producers == threads:
        return "1"
    if threads % producers == 0:
        return str(threads // producers)
    return None


def report_producer_sharing(directory, args):
    data = load_dir_json(directory, "producer-sharing.json")
    ctx = data.get("context", {})
    table = median_table(data)
    # (payload, linger) -> threads -> sharing -> (records/s, producers)
    groups = {}
    for _name, (p, m) in table.items():
        threads, producers = int(p["threads"]), int(p["producers"])
        key = sharing_key(threads, producers)
        if key is None:
            continue
        g = groups.setdefault((p.get("payload", "az"), p.get("linger_ms", "5")), {})
        g.setdefault(threads, {})[key] = (m.get("items_per_second"), producers, m)
    if not groups:
        raise ScenarioError("producer-sharing.json has no threads x producers rows")

    diffs = common_differences(ctx, [
        "Original: 24-core client host, 5 brokers (Kafka 0.8.2.1, Java producer) over 10 GbE, "
        "acks=1, 25M records of warm-up then 100M measured; 24 producer threads are far more "
        "than 2 cores can run at once, so here threads mostly measure contention.",
        "Here: librdkafka (%s), one topic of %s partitions with replication 1, "
        "warm-up and measured records as in the run names and commands.txt." % (
            ctx.get("librdkafka_version", "?"), _partitions(table) or "?")])
    lines = header("Producer sharing: records/s by application threads × producers per thread",
                   "seed 000 (Garry Turkington, users@kafka.apache.org, 2015-05-13, "
                   "\"Experiences testing new producer performance across multiple "
                   "threads/producer counts\")",
                   ctx, args.scale, args.tiny, args.wall_seconds, args.note, diffs)

    lines += ["## Records/s (median of repetitions)", ""]
    best_overall = None
    for (payload, linger), g in sorted(groups.items()):
        title = "payload %s%s, linger.ms %s" % (
            payload, " (repeated bodies, random keys)" if payload == "repeated" else "", linger)
        cols = [c for c in SHARING if any(c[0] in row for row in g.values())]
        lines += ["### %s" % title, "",
                  "| threads | " + " | ".join(c[1] for c in cols) + " |",
                  "|---:|" + "---:|" * len(cols)]
        best = None
        for threads in sorted(g):
            cells = []
            for key, _ in cols:
                if key in g[threads]:
                    rps, producers, _m = g[threads][key]
                    cells.append("%s (%d prod.)" % (fmt_k(rps), producers))
                    if rps is not None and (best is None or rps > best[0]):
                        best = (rps, threads, producers, key)
                else:
                    cells.append("—")
            lines.append("| %d | %s |" % (threads, " | ".join(cells)))
        if best:
            lines += ["", "Best: **%d threads %s**: %s records/s."
                      % (best[1], _seed_phrase(best[1], best[2]), fmt_k(best[0]))]
            if best_overall is None or best[0] > best_overall[0]:
                best_overall = best + (title,)
        lines += [""]
        # The seed's own phrasing, for reading side by side.
        lines += ["In the original's words:", "", "```"]
        for threads in sorted(g):
            for key, _ in cols:
                if key in g[threads]:
                    rps, producers, _m = g[threads][key]
                    lines.append("%d threads %s: %s" % (threads, _seed_phrase(threads, producers), fmt_k(rps)))
        lines += ["```", ""]
    if best_overall:
        lines += ["**Best setting of this run:** %d threads with %d producer(s), %s: %s records/s "
                  "(the original's best: 16 threads sharing 4 producers, 869K; 1.05M with repeated "
                  "bodies)." % (best_overall[1], best_overall[2], best_overall[4], fmt_k(best_overall[0])), ""]

    lines += ["## The original's numbers (records/s)", "",
              "| threads | " + " | ".join(c[1] for c in SHARING) + " |",
              "|---:|" + "---:|" * len(SHARING)]
    for threads, row in sorted(SEED000.items()):
        lines.append("| %d | %s |" % (threads, " | ".join(fmt_k(row.get(k)) for k, _ in SHARING)))
    lines += ["", "24 threads: 1 and 24 producers poor, 4/6/8 producers about the 16-thread/4-producer "
              "figure. Repeated bodies with random keys: 1.05M.", ""]

    lines += _counter_notes(table)
    lines += ["Files: `producer-sharing.json` (Google Benchmark JSON, every repetition), "
              "`producer-sharing.png`, `commands.txt`, `logs/`.", ""]
    _write_report(directory, lines)
    _chart_producer_sharing(directory, groups)


def _partitions(table):
    for _, (p, _m) in table.items():
        return p.get("partitions", "2")
    return None


def _seed_phrase(threads, producers):
    if producers == 1:
        return "sharing 1 client"
    if producers == threads:
        return "with dedicated client per thread"
    return "sharing %d clients" % producers


def _counter_notes(table):
    batches = [m.get("records_per_batch") for _, (p, m) in table.items() if m.get("records_per_batch")]
    errors = sum(m.get("errors", 0) for _, (p, m) in table.items())
    lines = []
    if batches:
        lines.append("Records per batch ranged %.0f–%.0f (the original thread's advice: watch "
                     "batch-size-avg)." % (min(batches), max(batches)))
    lines.append("Delivery errors over all rows: %d." % errors)
    lines.append("")
    return lines


def _chart_producer_sharing(directory, groups):
    plt = plt_module()
    keys = sorted(groups)
    fig, axes = plt.subplots(1, len(keys), figsize=(5.5 * len(keys), 4.2), squeeze=False)
    for ax, key in zip(axes[0], keys):
        g = groups[key]
        threads = sorted(g)
        cols = [c for c in SHARING if any(c[0] in g[t] for t in threads)]
        width = 0.8 / max(len(cols), 1)
        for i, (ck, label) in enumerate(cols):
            color = "C%d" % [k for k, _ in SHARING].index(ck)  # same column, same colour
            xs, ys = [], []
            for j, t in enumerate(threads):
                if ck in g[t] and g[t][ck][0] is not None:
                    xs.append(j + (i - (len(cols) - 1) / 2) * width)
                    ys.append(g[t][ck][0] / 1e3)
            ax.bar(xs, ys, width, label=label, color=color)
        ax.set_xticks(range(len(threads)))
        ax.set_xticklabels([str(t) for t in threads])
        ax.set_xlabel("application threads")
        ax.set_ylabel("thousand records/s")
        ax.set_title("payload %s, linger.ms %s" % key)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Producer sharing (seed 000): records/s, median of repetitions")
    fig.savefig(os.path.join(directory, "producer-sharing.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


# ------------------------------------------------------------------ acks-replication (seed 001)

ACKS_ORDER = [("0", "NONE"), ("1", "LEADER"), ("all", "ALL")]

# Bert Corderman's table (Kafka 0.8.0, three nodes, batches of 200): (size, acks) ->
# (rf2 MB/s, rf2 rec/s, rf3 MB/s, rf3 rec/s).
SEED001 = {
    (200, "0"): (251, 1313888, 237, 1242390), (300, "0"): (345, 1204384, 320, 1120197),
    (1000, "0"): (522, 546896, 515, 540541), (2200, "0"): (368, 175165, 367, 174709),
    (200, "1"): (115, 604376, 141, 739754), (300, "1"): (186, 650280, 192, 670062),
    (1000, "1"): (340, 356659, 328, 343808), (2200, "1"): (310, 147846, 293, 139729),
    (200, "all"): (74, 385594, 58, 304386), (300, "all"): (105, 367282, 78, 272316),
    (1000, "all"): (203, 212400, 124, 130305), (2200, "all"): (212, 100820, 136, 64835),
}


def _acks_rows(data):
    """(batched, size, acks, rf) -> (MiB/s, records/s)."""
    rows = {}
    for _name, (p, m) in median_table(data).items():
        size = int(p["record_bytes"])
        batch = int(p.get("batch_bytes", 1000000))
        batched = batch > size  # batches of 1 record are named batch_bytes = record size
        key = (batched, size, p["acks"], int(p.get("replication", 1)))
        bps = m.get("bytes_per_second")
        rows[key] = (bps / MIB if bps is not None else None, m.get("items_per_second"))
    return rows


def report_acks_replication(directory, args):
    single = load_dir_json(directory, "single.json")
    ctx = single.get("context", {})
    runs = [("one producer process", _acks_rows(single))]
    three_path = os.path.join(directory, "three-processes.json")
    if os.path.exists(three_path):
        runs.append(("three concurrent producer processes (sum)", _acks_rows(kr.load(three_path))))
    brokers = ctx.get("broker_count", "?")
    diffs = common_differences(ctx, [
        "Original: Kafka 0.8.0, three 16-core nodes with 12 disks each, the 0.8 Scala producer "
        "(kafka-producer-perf-test, 8 threads), separate client machines; here librdkafka %s, "
        "%s broker(s) on this host, one topic of 3 partitions per case." % (
            ctx.get("librdkafka_version", "?"), brokers),
        "Batches of 1 record: batch.num.messages=1, batch_bytes = record size, linger.ms 0. "
        "Batches of 200: batch.num.messages=200, batch_bytes = 200 × record size, linger.ms 10.",
        "\"Per server\" divides the replication-3 figure by the broker count, as the original did.",
        "MB means MiB (2^20 bytes) of record values, as in Kafka's tools and the original."])
    lines = header("Acks and replication: MB/s and records/s by record size",
                   "seed 001 (Bert Corderman, users@kafka.apache.org, 2014-04-25, "
                   "\"performance testing data to share\")",
                   ctx, args.scale, args.tiny, args.wall_seconds, args.note, diffs)
    try:
        nbrokers = int(brokers)
    except ValueError:
        nbrokers = 3
    for title, rows in runs:
        for batched in (True, False):
            sub = {k[1:]: v for k, v in rows.items() if k[0] == batched}
            if not sub:
                continue
            sizes = sorted({k[0] for k in sub})
            rfs = sorted({k[2] for k in sub})
            lines += ["## %s, batches of %s" % (title.capitalize(), "200" if batched else "1"), ""]
            head = ["message.size", "acks"]
            for rf in rfs:
                head += ["Replica=%d MB.sec" % rf, "Replica=%d nMsg.sec" % rf]
            if 3 in rfs:
                head += ["Per Server MB.sec", "Per Server nMsg.sec"]
            lines += ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
            for acks, label in ACKS_ORDER:
                for size in sizes:
                    if not any((size, acks, rf) in sub for rf in rfs):
                        continue
                    cells = [str(size), label]
                    for rf in rfs:
                        mb, rps = sub.get((size, acks, rf), (None, None))
                        cells += [fmt_mb(mb), fmt_int(rps)]
                    if 3 in rfs:
                        mb, rps = sub.get((size, acks, 3), (None, None))
                        cells += [fmt_mb(mb / nbrokers if mb is not None else None),
                                  fmt_int(rps / nbrokers if rps is not None else None)]
                    lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
        lines += _batching_summary(rows)
    lines += ["## The original's table (batches of 200, Kafka 0.8.0, 3 nodes)", "",
              "| message.size | acks | Replica=2 MB.sec | Replica=2 nMsg.sec | Replica=3 MB.sec | Replica=3 nMsg.sec |",
              "|---:|---:|---:|---:|---:|---:|"]
    for acks, label in ACKS_ORDER:
        for size in (200, 300, 1000, 2200):
            v = SEED001[(size, acks)]
            lines.append("| %d | %s | %d | %s | %d | %s |" % (size, label, v[0], fmt_int(v[1]), v[2], fmt_int(v[3])))
    lines += ["", "Original headline: batches of 200 gave 283 MB/s against 44 MB/s for batches of 1 "
              "(2200 B, one broker, acks none); three producer processes almost doubled one.", "",
              "Files: `single.json`, `three-processes.json` (per benchmark, the sum of the three "
              "processes' medians), `raw/` (every process's own JSON), `acks-replication.png`, "
              "`commands.txt`, `logs/`.", ""]
    _write_report(directory, lines)
    _chart_acks(directory, runs)


def _batching_summary(rows):
    out = []
    for (batched, size, acks, rf), (mb, _r) in sorted(rows.items()):
        if not batched or mb is None:
            continue
        other = rows.get((False, size, acks, rf))
        if other and other[0]:
            out.append("- %d B, acks %s, replication %d: batches of 200 %s MB/s vs batches of 1 %s MB/s (×%.1f)"
                       % (size, acks, rf, fmt_mb(mb), fmt_mb(other[0]), mb / other[0]))
    if out:
        out = ["Batching effect:", ""] + out + [""]
    return out


def _chart_acks(directory, runs):
    plt = plt_module()
    panels = []
    for title, rows in runs:
        for batched in (True, False):
            sub = {k[1:]: v for k, v in rows.items() if k[0] == batched}
            if sub:
                panels.append(("%s\nbatches of %s" % (title, "200" if batched else "1"), sub))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (title, sub) in zip(axes[0], panels):
        sizes = sorted({k[0] for k in sub})
        series = [(acks, label, rf) for acks, label in ACKS_ORDER for rf in sorted({k[2] for k in sub})
                  if any((s, acks, rf) in sub for s in sizes)]
        width = 0.8 / max(len(series), 1)
        for i, (acks, label, rf) in enumerate(series):
            xs = [j + (i - (len(series) - 1) / 2) * width for j, s in enumerate(sizes) if (s, acks, rf) in sub]
            ys = [sub[(s, acks, rf)][0] or 0 for s in sizes if (s, acks, rf) in sub]
            ax.bar(xs, ys, width, label="acks %s, rf %d" % (label, rf))
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([str(s) for s in sizes])
        ax.set_xlabel("record bytes")
        ax.set_ylabel("MiB/s")
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Acks and replication (seed 001): MiB/s of record values")
    fig.savefig(os.path.join(directory, "acks-replication.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


# ------------------------------------------------------------------ compression-format (seed 003)

CASE_KEYS = [("max_in_flight", "max.in.flight.requests.per.connection"), ("payload", "valueBound"),
             ("linger_ms", "linger.ms"), ("record_bytes", "messageSize"), ("codec", "compression.type")]


def _case_text(name):
    p = kr.parse_name(name)[2]
    parts = []
    for key, label in CASE_KEYS:
        v = p.get(key, {"max_in_flight": "5", "linger_ms": "5"}.get(key, "?"))
        if key == "payload" and v.startswith("value_bound:"):
            v = v.split(":", 1)[1]
        parts.append("%s=%s" % (label, v))
    return ",  ".join(parts)


def report_compression_format(directory, args):
    a = load_dir_json(directory, "A.json")
    b = load_dir_json(directory, "B.json")
    vpath = os.path.join(directory, "verdict.json")
    if not os.path.exists(vpath):
        raise ScenarioError("%s does not exist (scripts/compare did not run?)" % vpath)
    with open(vpath, encoding="utf-8") as f:
        verdict = json.load(f)
    ctx_a, ctx_b = a.get("context", {}), b.get("context", {})
    label_a = args.label_a or "A"
    label_b = args.label_b or "B"
    med_a, med_b = median_table(a), median_table(b)
    reps = max((len(g["runs"]) for g in kr.group_runs(a).values()), default=0)

    diffs = common_differences(ctx_a, [
        "Original: Kafka's benchmark_test on trunk (after KIP-31/32, message format v1) vs 0.9 "
        "(format v0), Java producer, three brokers; here A = %s, B = %s, librdkafka producers, "
        "%s broker(s)." % (label_a, label_b, ctx_a.get("broker_count", "?")),
        "The original ran each case once per run, eight runs; here A and B alternate, "
        "%d repetitions each, and only differences that scripts/compare finds significant "
        "(exact rank test, alpha %g, Hodges-Lehmann shift ≥ %g %%) are listed." % (
            reps, verdict.get("alpha", 0), verdict.get("threshold_pct", 0)),
        "Throughput is MiB/s of record values (bytes_per_second), as in the original's MB/sec."])
    lines = header("Compression and record format: where %s beats %s" % (label_a, label_b),
                   "seed 003 (KAFKA-3565, \"Producer's throughput lower with compressed data "
                   "after KIP-31/32\", Jiangjie Qin's comment of 2016-04-22)",
                   ctx_a, args.scale, args.tiny, args.wall_seconds, args.note, diffs)
    lines += ["| side | spec | librdkafka | broker | client settings |", "|---|---|---|---|---|"]
    for side, label, ctx in (("A", label_a, ctx_a), ("B", label_b, ctx_b)):
        client = ", ".join("%s=%s" % (k[7:], v) for k, v in sorted(ctx.items())
                           if k.startswith("client.") and k[7:] in ("api.version.request",
                                                                    "broker.version.fallback"))
        lines.append("| %s | %s | %s | %s | %s |" % (side, label, ctx.get("librdkafka_version", "?"),
                                                     ctx.get("broker_version", "?"), client or "—"))
    lines.append("")

    def rows_for(kind):
        out = []
        for r in verdict.get(kind, []):
            if r.get("metric") != "bytes_per_second":
                continue
            out.append(r)
        return sorted(out, key=lambda r: r["name"])

    a_wins = rows_for("regressions")      # B (new) lower than A (base): A beats B
    b_wins = rows_for("improvements")
    for title, rows, first, second in (
            ("Cases where A (%s) beats B (%s)" % (label_a, label_b), a_wins, "B", "A"),
            ("Cases where B (%s) beats A (%s)" % (label_b, label_a), b_wins, "A", "B")):
        lines += ["## %s" % title, ""]
        if not rows:
            lines += ["None that is significant.", ""]
            continue
        lines += ["(as in the original: the configuration, then loser < winner in MB/s, then the "
                  "difference; p is the U test's p-value)", "", "```"]
        for r in rows:
            lo, hi = (r["new_median"], r["base_median"]) if first == "B" else (r["base_median"], r["new_median"])
            diff = abs(r["change_pct"]) if r.get("change_pct") is not None else float("nan")
            lines.append("%s wins:  %s    (%s %.2f  <  %s %.2f,  %.0f%%,  p=%.3g)" % (
                second, _case_text(r["name"]), first, lo / MIB, second, hi / MIB,
                diff if first == "B" else abs(hi - lo) / lo * 100.0, r.get("p_value") or 0))
        lines += ["```", ""]

    unchanged = sum(1 for r in verdict.get("unchanged", []) if r.get("metric") == "bytes_per_second")
    inconclusive = [r for r in verdict.get("inconclusive", []) if r.get("metric") in ("bytes_per_second", "-")]
    lines += ["Of %d cases: %d A wins, %d B wins, %d no significant difference, %d inconclusive "
              "(too few repetitions or a failed run)." % (len(set(med_a) & set(med_b)), len(a_wins),
                                                          len(b_wins), unchanged, len(inconclusive)), ""]
    if verdict.get("only_in_base") or verdict.get("only_in_new"):
        lines += ["Cases run on one side only (not compared): %d in A, %d in B." % (
            len(verdict.get("only_in_base", [])), len(verdict.get("only_in_new", []))), ""]

    lines += ["## Every case (medians, MiB/s)", "",
              "| max.in.flight | valueBound | linger.ms | messageSize | codec | A | B | change | verdict |",
              "|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    verdict_of = {}
    for kind in ("regressions", "improvements", "unchanged", "inconclusive"):
        for r in verdict.get(kind, []):
            if r.get("metric") in ("bytes_per_second", "-"):
                verdict_of[r["name"]] = {"regressions": "A wins", "improvements": "B wins",
                                         "unchanged": "same", "inconclusive": "inconclusive"}[kind]
    for name in sorted(set(med_a) & set(med_b), key=_case_sort_key):
        p = kr.parse_name(name)[2]
        va = med_a[name][1].get("bytes_per_second")
        vb = med_b[name][1].get("bytes_per_second")
        change = "%+.1f%%" % ((vb - va) / va * 100) if va and vb is not None else "—"
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            p.get("max_in_flight", "5"), p.get("payload", "?").replace("value_bound:", ""),
            p.get("linger_ms", "5"), p.get("record_bytes", "?"), p.get("codec", "?"),
            fmt_mb(va / MIB if va else None), fmt_mb(vb / MIB if vb else None), change,
            verdict_of.get(name, "—")))
    lines += ["", "The original (run 1 of 8, 0.9 winning over trunk): max.in.flight=5, valueBound=500, "
              "linger.ms=0, messageSize=100, gzip (2.04 < 2.38, 16%); almost every case where the "
              "older version won had max.in.flight=5 and messageSize=100.", "",
              "Files: `A.json`, `B.json` (every repetition of each side), `verdict.json` "
              "(scripts/compare A.json B.json), `raw/`, `compression-format.png`, `commands.txt`, "
              "`logs/`.", ""]
    _write_report(directory, lines)
    _chart_compression(directory, med_a, med_b, verdict_of, label_a, label_b)


def _case_sort_key(name):
    p = kr.parse_name(name)[2]

    def num(v):
        m = re.search(r"\d+", v or "")
        return int(m.group()) if m else 0
    return (num(p.get("max_in_flight", "5")), num(p.get("payload")), num(p.get("linger_ms", "5")),
            num(p.get("record_bytes")), p.get("codec", ""))


def _chart_compression(directory, med_a, med_b, verdict_of, label_a, label_b):
    plt = plt_module()
    names = sorted(set(med_a) & set(med_b), key=_case_sort_key)
    labels, changes, colors = [], [], []
    for n in names:
        va = med_a[n][1].get("bytes_per_second")
        vb = med_b[n][1].get("bytes_per_second")
        if not va or vb is None:
            continue
        p = kr.parse_name(n)[2]
        labels.append("mif %s vb %s lg %s sz %s %s" % (
            p.get("max_in_flight", "5"), p.get("payload", "?").replace("value_bound:", ""),
            p.get("linger_ms", "5"), p.get("record_bytes", "?"), p.get("codec", "?")))
        changes.append((vb - va) / va * 100)
        v = verdict_of.get(n)
        colors.append("tab:red" if v == "A wins" else "tab:green" if v == "B wins" else "tab:gray")
    fig, ax = plt.subplots(figsize=(8, max(3, 0.22 * len(labels) + 1)))
    ax.barh(range(len(labels)), changes, color=colors)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("B vs A, %% change of MiB/s (red: A (%s) wins, green: B (%s) wins, gray: not significant)"
                  % (label_a, label_b), fontsize=8)
    ax.set_title("Compression and format (seed 003)")
    ax.grid(axis="x", alpha=0.3)
    fig.savefig(os.path.join(directory, "compression-format.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


# ------------------------------------------------------------------ main

def _write_report(directory, lines):
    path = os.path.join(directory, "report.md")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    os.replace(path + ".tmp", path)


REPORTS = {"producer-sharing": report_producer_sharing,
           "acks-replication": report_acks_replication,
           "compression-format": report_compression_format}


def main(argv):
    ap = ArgumentParser(prog="kbench_scenario.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("context")
    c.add_argument("json")
    c.add_argument("key")
    s = sub.add_parser("sum")
    s.add_argument("out")
    s.add_argument("inputs", nargs="+")
    m = sub.add_parser("merge")
    m.add_argument("out")
    m.add_argument("inputs", nargs="+")
    r = sub.add_parser("report")
    r.add_argument("scenario", choices=sorted(REPORTS))
    r.add_argument("dir")
    r.add_argument("--scale", required=True)
    r.add_argument("--tiny", action="store_true")
    r.add_argument("--wall-seconds", type=int)
    r.add_argument("--note", action="append", default=[])
    r.add_argument("--label-a")
    r.add_argument("--label-b")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "context":
            cmd_context(args.json, args.key)
        elif args.cmd == "sum":
            kr.write_json(args.out, sum_processes([kr.load(p) for p in args.inputs], args.inputs))
        elif args.cmd == "merge":
            kr.write_json(args.out, merge_files([kr.load(p) for p in args.inputs], args.inputs))
        else:
            REPORTS[args.scenario](args.dir, args)
    except (ScenarioError, kr.BenchmarkJsonError) as e:
        die(e)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
