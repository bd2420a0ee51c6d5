"""Report of the producer-sharing scenario (seed 000): records/s by threads x shared producers, in the seed's table.
Run by ./run as `report.py DIR --scale S ...` (kbench_scenario.report_main)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "lib"))

import kbench_scenario as ks  # noqa: E402

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


def report(directory, args):
    data = ks.load_dir_json(directory, "producer-sharing.json")
    ctx = data.get("context", {})
    table = ks.median_table(data)
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
        raise ks.ScenarioError("producer-sharing.json has no threads x producers rows")

    diffs = ks.common_differences(ctx, [
        "Original: 24-core client host, 5 brokers (Kafka 0.8.2.1, Java producer) over 10 GbE, "
        "acks=1, 25M records of warm-up then 100M measured; 24 producer threads are far more "
        "than 2 cores can run at once, so here threads mostly measure contention.",
        "Here: librdkafka (%s), one topic of %s partitions with replication 1, "
        "warm-up and measured records as in the run names and commands.txt." % (
            ctx.get("librdkafka_version", "?"), _partitions(table) or "?")])
    lines = ks.header("Producer sharing: records/s by application threads × producers per thread",
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
                    cells.append("%s (%d prod.)" % (ks.fmt_k(rps), producers))
                    if rps is not None and (best is None or rps > best[0]):
                        best = (rps, threads, producers, key)
                else:
                    cells.append("—")
            lines.append("| %d | %s |" % (threads, " | ".join(cells)))
        if best:
            lines += ["", "Best: **%d threads %s**: %s records/s."
                      % (best[1], _seed_phrase(best[1], best[2]), ks.fmt_k(best[0]))]
            if best_overall is None or best[0] > best_overall[0]:
                best_overall = best + (title,)
        lines += [""]
        # The seed's own phrasing, for reading side by side.
        lines += ["In the original's words:", "", "```"]
        for threads in sorted(g):
            for key, _ in cols:
                if key in g[threads]:
                    rps, producers, _m = g[threads][key]
                    lines.append("%d threads %s: %s" % (threads, _seed_phrase(threads, producers), ks.fmt_k(rps)))
        lines += ["```", ""]
    if best_overall:
        lines += ["**Best setting of this run:** %d threads with %d producer(s), %s: %s records/s "
                  "(the original's best: 16 threads sharing 4 producers, 869K; 1.05M with repeated "
                  "bodies)." % (best_overall[1], best_overall[2], best_overall[4], ks.fmt_k(best_overall[0])), ""]

    lines += ["## The original's numbers (records/s)", "",
              "| threads | " + " | ".join(c[1] for c in SHARING) + " |",
              "|---:|" + "---:|" * len(SHARING)]
    for threads, row in sorted(SEED000.items()):
        lines.append("| %d | %s |" % (threads, " | ".join(ks.fmt_k(row.get(k)) for k, _ in SHARING)))
    lines += ["", "24 threads: 1 and 24 producers poor, 4/6/8 producers about the 16-thread/4-producer "
              "figure. Repeated bodies with random keys: 1.05M.", ""]

    lines += _counter_notes(table)
    lines += ["Files: `producer-sharing.json` (Google Benchmark JSON, every repetition), "
              "`producer-sharing.png`, `commands.txt`, `logs/`.", ""]
    ks.write_report(directory, lines)
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
    plt = ks.plt_module()
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

if __name__ == "__main__":
    sys.exit(ks.report_main(report))
