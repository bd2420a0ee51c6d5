"""Report of the acks-replication scenario (seed 001): MB/s and records/s by record size,
acks and replication, in the seed's table.
Run by run.py as `report.py DIR --scale S ...` (kbench.scenario.report_main)."""

import collections
import sys

from kbench import scenario as ks
from kbench import text

ACKS_ORDER = [("0", "NONE"), ("1", "LEADER"), ("all", "ALL")]
NEXT_ACKS = {"0": "1", "1": "all"}

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
    """(batched, size, acks, rf) -> (MiB/s, records/s), each a Spread over repetitions."""
    rows = {}
    for _name, (p, m) in ks.spread_table(data).items():
        size = int(p["record_bytes"])
        batch = int(p.get("batch_bytes", 1000000))
        batched = batch > size  # batches of 1 record are named batch_bytes = record size
        key = (batched, size, p["acks"], int(p.get("replication", 1)))
        bps = m.get("bytes_per_second")
        rows[key] = (bps.scaled(1 / ks.MIB) if bps is not None else None, m.get("items_per_second"))
    return rows


def report(directory, args):
    single = ks.load_dir_json(directory, "single.json")
    ctx = single.get("context", {})
    runs = [("one producer process", _acks_rows(single))]
    three = ks.load_dir_json(directory, "three-processes.json", optional=True)
    if three is not None:
        runs.append(("three concurrent producer processes (sum)", _acks_rows(three)))
    brokers = ctx.get("broker_count", "?")
    lines = ks.header(args, "Acks and replication: MB/s and records/s by record size",
                      "seed 001 (Bert Corderman, users@kafka.apache.org, 2014-04-25, "
                      "\"performance testing data to share\")", ctx, [
        "Original: Kafka 0.8.0, three 16-core nodes with 12 disks each, the 0.8 Scala producer "
        "(kafka-producer-perf-test, 8 threads), separate client machines; here librdkafka %s, "
        "%s broker(s) on this host, one topic of 3 partitions per case." % (
            ctx.get("librdkafka_version", "?"), brokers),
        "Batches of 1 record: batch.num.messages=1, batch_bytes = record size, linger.ms 0. "
        "Batches of 200: batch.num.messages=200, batch_bytes = 200 × record size, linger.ms 10.",
        "\"Per server\" divides the replication-3 figure by the broker count, as the original did.",
        "MB means MiB (2^20 bytes) of record values, as in Kafka's tools and the original."])
    nbrokers = int(brokers) if str(brokers).isdigit() else 3
    for title, rows in runs:
        for batched, sub in _halves(rows):
            sizes, rfs = sorted({k[0] for k in sub}), sorted({k[2] for k in sub})
            lines += ["## %s, batches of %s" % (title.capitalize(), "200" if batched else "1"), ""]
            cols = [(rf, 1, "Replica=%d" % rf) for rf in rfs]  # (replication, scale, heading)
            if 3 in rfs:
                cols.append((3, 1 / nbrokers, "Per Server"))
            head = ["message.size", "acks"] + [h % c[2] for c in cols for h in ("%s MB.sec", "%s nMsg.sec")]
            table = [[str(size), label] + [ks.fmt_spread(s and s.scaled(k)) for rf, k, _ in cols
                                           for s in sub.get((size, acks, rf), (None, None))]
                     for acks, label in ACKS_ORDER for size in sizes
                     if any((size, acks, rf) in sub for rf in rfs)]
            lines += text.table(head, table, markdown=True).splitlines() + [""]
        lines += _batching_summary(rows)
        lines += _orderings(rows)
    lines += _losses(single)
    lines += ["## The original's table (batches of 200, Kafka 0.8.0, 3 nodes)", ""]
    lines += text.table(
        ["message.size", "acks", "Replica=2 MB.sec", "Replica=2 nMsg.sec", "Replica=3 MB.sec",
         "Replica=3 nMsg.sec"],
        [[str(size), label, str(v[0]), text.number(v[1]), str(v[2]), text.number(v[3])]
         for acks, label in ACKS_ORDER for size in (200, 300, 1000, 2200)
         for v in [SEED001[(size, acks)]]], markdown=True).splitlines()
    lines += ["", "Original headline: batches of 200 gave 283 MB/s against 44 MB/s for batches of 1 "
              "(2200 B, one broker, acks none); three producer processes almost doubled one.", "",
              "Files: `single.json`, `three-processes.json` (per benchmark and repetition, the sum of the three "
              "processes'), `raw/` (every process's own JSON), `acks-replication.png`, `commands.txt`, `logs/`.", ""]
    ks.write_report(directory, lines)
    _chart_acks(directory, runs)


def _halves(rows):
    """(batched, {(size, acks, rf): cells}) for batches of 200, then of 1, where any ran."""
    return [(b, sub) for b in (True, False) for sub in [{k[1:]: v for k, v in rows.items() if k[0] == b}] if sub]


def _losses(data):
    """acks=0 cases run with --allow-loss: what they lost, from their end offsets."""
    lost = collections.Counter()
    for b in data.get("benchmarks", []):
        if "/acks:0/" in b.get("name", "") and b.get("run_type") != "aggregate":
            lost[b["run_name"]] += int(b.get("lost_records", 0))
    if not lost:
        return []
    out = ["Records lost at acks=0 (delivered by the client, missing from the log's end offsets; "
           "acks=0 does not wait for the broker, so this is allowed and reported):", ""]
    out += ["- %s: %d" % (name, n) for name, n in sorted(lost.items())]
    return out + [""]


def _batching_summary(rows):
    out = []
    for (batched, size, acks, rf), (mb, _r) in sorted(rows.items()):
        other = rows.get((False, size, acks, rf), (None, None))[0]
        if not batched or mb is None or other is None or not other.median:
            continue
        out.append("- %d B, acks %s, replication %d: batches of 200 %s MB/s vs batches of 1 %s MB/s (%s)" % (
            size, acks, rf, ks.fmt_spread(mb), ks.fmt_spread(other),
            "×%.1f" % (mb.median / other.median) if ks.order(mb, other)
            else "%s: no order claimed" % ks.unordered_reason(mb, other)))
    if out:
        out = ["Batching effect (median [lowest–highest] over repetitions):", ""] + out + [""]
    return out


def _orderings(rows):
    """Which neighbouring cells this run can order: acks levels at one size and replication,
    and replication 2 against 3 at one size and acks. Only ranges that do not overlap count."""
    ordered, tied = [], []
    names = dict(ACKS_ORDER)

    def judge(what, a, b, la, lb):
        if a is None or b is None:
            return
        o = ks.order(a, b)
        if o:
            hi, lo = (la, lb) if o > 0 else (lb, la)
            ordered.append("%s: %s > %s" % (what, hi, lo))
        else:
            tied.append("%s: %s ≈ %s%s" % (what, la, lb, "" if ks.unordered_reason(a, b) == "ranges overlap"
                                              else " (%s)" % ks.unordered_reason(a, b)))

    for (batched, size, acks, rf), (mb, _r) in sorted(rows.items()):
        what = "%d B%s" % (size, "" if batched else ", batches of 1")
        if nxt := NEXT_ACKS.get(acks):
            other = rows.get((batched, size, nxt, rf), (None, None))[0]
            judge("%s, replication %d" % (what, rf), mb, other, "acks %s" % names[acks], "acks %s" % names[nxt])
        if rf == 2:
            other = rows.get((batched, size, acks, 3), (None, None))[0]
            judge("%s, acks %s" % (what, names[acks]), mb, other, "replication 2", "replication 3")
    if not ordered and not tied:
        return []
    reps = min((mb.n for mb, _r in rows.values() if mb is not None), default=0)
    out = ["What this run can order (MB/s; a > b only when every repetition of a beat every repetition of b):", ""]
    out += ["- %s" % o for o in ordered] or ["- nothing"]
    if tied:
        out += ["", "Not ordered (ranges overlap, unless said): " + "; ".join(tied) + "."]
    note = ks.chance_orders_note(len(ordered) + len(tied), reps)
    return out + ([""] + [note] if note else []) + [""]


def _chart_acks(directory, runs):
    plt = ks.plt_module()
    panels = [("%s\nbatches of %s" % (title, "200" if batched else "1"), sub)
              for title, rows in runs for batched, sub in _halves(rows)]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (title, sub) in zip(axes[0], panels):
        sizes = sorted({k[0] for k in sub})
        series = [(acks, label, rf) for acks, label in ACKS_ORDER for rf in sorted({k[2] for k in sub})
                  if any((s, acks, rf) in sub for s in sizes)]
        ks.grouped_bars(ax, [("acks %s, rf %d" % (label, rf),
                              [(j, sub[(s, acks, rf)][0]) for j, s in enumerate(sizes)
                               if (s, acks, rf) in sub and sub[(s, acks, rf)][0] is not None], {})
                             for acks, label, rf in series])
        ax.set(xticks=range(len(sizes)), xticklabels=[str(s) for s in sizes], xlabel="record bytes", ylabel="MiB/s")
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Acks and replication (seed 001): MiB/s of record values, median and range of repetitions")
    ks.save_chart(fig, directory, "acks-replication.png")

if __name__ == "__main__":
    sys.exit(ks.report_main(report))
