"""Report of the producer-sharing scenario (seed 000): records/s by threads x shared producers, in the seed's table.
Run by run.py as `report.py DIR --scale S ...` (kbench.scenario.report_main)."""

import sys

from kbench import scenario as ks
from kbench import text

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
    return str(threads // producers) if threads % producers == 0 else None


def report(directory, args):
    data = ks.load_dir_json(directory, "producer-sharing.json")
    ctx = data.get("context", {})
    table = ks.spread_table(data)
    # (payload, linger) -> threads -> sharing -> (records/s Spread, producers, metrics)
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

    lines = ks.header(args, "Producer sharing: records/s by application threads × producers per thread",
                      "seed 000 (Garry Turkington, users@kafka.apache.org, 2015-05-13, \"Experiences testing new "
                      "producer performance across multiple threads/producer counts\")", ctx, [
        "Original: 24-core client host, 5 brokers (Kafka 0.8.2.1, Java producer) over 10 GbE, "
        "acks=1, 25M records of warm-up then 100M measured; 24 producer threads are far more "
        "than 2 cores can run at once, so here threads mostly measure contention.",
        "Here: librdkafka (%s), one topic of %s partitions with replication 1, "
        "warm-up and measured records as in the run names and commands.txt." % (
            ctx.get("librdkafka_version", "?"), next(iter(table.values()))[0].get("partitions", "2"))])

    lines += ["## Records/s (median [lowest–highest] of repetitions)", ""]
    best_overall = None
    for (payload, linger), g in sorted(groups.items()):
        title = "payload %s%s, linger.ms %s" % (
            payload, " (repeated bodies, random keys)" if payload == "repeated" else "", linger)
        cols = [c for c in SHARING if any(c[0] in row for row in g.values())]
        best, rows, words = None, [], []  # words: the seed's own phrasing, to read side by side
        for threads in sorted(g):
            cells = [str(threads)]
            for key, _ in cols:
                if key not in g[threads]:
                    cells.append("—")
                    continue
                rps, producers, _m = g[threads][key]
                cells.append("%s (%d prod.)" % (ks.fmt_spread(rps), producers))
                words.append("%d threads %s: %s" % (threads, _seed_phrase(threads, producers),
                                                    text.number(rps.median if rps else None)))
                if rps is not None and (best is None or rps.median > best[0].median):
                    best = (rps, threads, producers, key)
            rows.append(cells)
        lines += ["### %s" % title, ""]
        lines += text.table(["threads"] + [c[1] for c in cols], rows, markdown=True).splitlines()
        if best:
            lines += ["", "Highest median: **%d threads %s**: %s records/s. %s"
                      % (best[1], _seed_phrase(best[1], best[2]), ks.fmt_spread(best[0]),
                         _not_ordered_with(g, best))]
            if best_overall is None or best[0].median > best_overall[0].median:
                best_overall = best + (title,)
        lines += ["", "In the original's words:", "", "```"] + words + ["```", ""]
    if best_overall:
        lines += ["**Highest median of this run:** %d threads with %d producer(s), %s: %s records/s "
                  "(the original's best: 16 threads sharing 4 producers, 869K; 1.05M with repeated "
                  "bodies)." % (best_overall[1], best_overall[2], best_overall[4],
                                ks.fmt_spread(best_overall[0])), ""]

    lines += ["## The original's numbers (records/s)", ""]
    lines += text.table(["threads"] + [c[1] for c in SHARING],
                         [[str(threads)] + [text.number(row.get(k)) for k, _ in SHARING]
                          for threads, row in sorted(SEED000.items())], markdown=True).splitlines()
    lines += ["", "24 threads: 1 and 24 producers poor, 4/6/8 producers about the 16-thread/4-producer "
              "figure. Repeated bodies with random keys: 1.05M.", ""]

    lines += _counter_notes(table)
    lines += ["Files: `producer-sharing.json` (Google Benchmark JSON, every repetition), "
              "`producer-sharing.png`, `commands.txt`, `logs/`.", ""]
    ks.write_report(directory, lines)
    _chart_producer_sharing(directory, groups)


def _not_ordered_with(g, best):
    """The cells this run cannot tell from the best one: their ranges overlap its range."""
    rps = best[0]
    ties = ["%d threads %s" % (t, _seed_phrase(t, cell[1]))
            for t in sorted(g) for k, cell in g[t].items()
            if (t, k) != (best[1], best[3]) and cell[0] is not None and not ks.order(rps, cell[0])]
    if rps.n < ks.ORDER_MIN_N:
        return "Fewer than %d repetitions: no order is claimed." % ks.ORDER_MIN_N
    if not ties:
        return "Every repetition of it beat every repetition of every other cell."
    return "Not ordered against it (ranges overlap): %s." % "; ".join(ties)


def _seed_phrase(threads, producers):
    if producers == threads and producers != 1:
        return "with dedicated client per thread"
    return "sharing %d client%s" % (producers, "" if producers == 1 else "s")


def _counter_notes(table):
    batches = [m["records_per_batch"].median for _p, m in table.values() if m.get("records_per_batch")]
    errors = sum(m["errors"].total for _p, m in table.values() if m.get("errors"))
    lines = ["Records per batch ranged %.0f–%.0f (the original thread's advice: watch batch-size-avg)."
             % (min(batches), max(batches))] if batches else []
    return lines + ["Delivery errors over all rows: %d." % errors, ""]


def _chart_producer_sharing(directory, groups):
    plt = ks.plt_module()
    keys = sorted(groups)
    fig, axes = plt.subplots(1, len(keys), figsize=(5.5 * len(keys), 4.2), squeeze=False)
    for ax, key in zip(axes[0], keys):
        g = groups[key]
        threads = sorted(g)
        cols = [c for c in SHARING if any(c[0] in g[t] for t in threads)]
        # Same column, same colour.
        ks.grouped_bars(ax, [(label, [(j, g[t][ck][0]) for j, t in enumerate(threads)
                                      if ck in g[t] and g[t][ck][0] is not None],
                              {"color": "C%d" % [k for k, _ in SHARING].index(ck)})
                             for ck, label in cols], 1e-3)
        ax.set(xticks=range(len(threads)), xticklabels=[str(t) for t in threads],
               xlabel="application threads", ylabel="thousand records/s",
               title="payload %s, linger.ms %s" % key)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Producer sharing (seed 000): records/s, median and range of repetitions")
    ks.save_chart(fig, directory, "producer-sharing.png")

if __name__ == "__main__":
    sys.exit(ks.report_main(report))
