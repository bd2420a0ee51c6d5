"""Prints a compact table of a kbench JSON result: the median of each benchmark's
repetitions, with throughput and the counters that matter for its family; the spread of
windowed rows across their per-second intervals; open-loop rows that missed their target
rate; and each row's ratio to its reference row (send / bare_producev, kbench / direct)."""

import json
import statistics
import sys

from kbench import facts, text


def human(value):
    """A number with three significant digits and an SI prefix ("-" for None)."""
    return text.number(value, missing="-")


def references():
    """[(row prefix, reference prefix, label)] of each family's "references" (kbench --describe=json)."""
    return [("%s/%s/" % (f["name"], r["of"]), "%s/%s/" % (f["name"], r["variant"]), r["label"])
            for f in facts.families() for r in f.get("references", []) if r["of"]]


def by_repetition(reps, key="items_per_second"):
    return {r.get("repetition_index", i): r[key] for i, r in enumerate(reps) if key in r}


def ratio_rows(groups):
    """(label, median ratio of a row's records/s to its reference's, the range of the ratios of
    repetition i to i, n, row)."""
    rows = []
    try:
        refs = references()
    except facts.FactsUnavailable:
        refs = []  # a summary without the reference ratios rather than none
    for name, reps in groups.items():
        for variant, reference, label in refs:
            if not name.startswith(variant):
                continue
            ref_reps = groups.get(reference + name[len(variant):])
            if not ref_reps:
                continue
            a, b = by_repetition(reps), by_repetition(ref_reps)
            pairs = [a[i] / b[i] for i in sorted(set(a) & set(b)) if b[i] > 0]
            if not pairs or not a or not b:
                continue
            med = statistics.median(a.values()) / statistics.median(b.values())
            rows.append((label, "%.3f" % med, "%.3f-%.3f" % (min(pairs), max(pairs)), len(pairs), name))
    return rows


def interval_spread(series_list):
    """(median CV of records/s across each repetition's intervals, min, max records/s over
    every interval of every repetition)."""
    cvs, rates = [], []
    for s in series_list:
        full = s["seconds"][0] if s.get("seconds") else 0
        values = [r for r, w in zip(s["records_per_second"], s["seconds"]) if w >= full * 0.999]
        rates += values
        if len(values) >= 2 and statistics.mean(values) > 0:
            cvs.append(statistics.stdev(values) / statistics.mean(values))
    if not rates:
        return None
    return (statistics.median(cvs) if cvs else 0.0), min(rates), max(rates)


def main(path):
    try:
        with open(path) as f:
            data = json.load(f)
        runs = data["benchmarks"]
    except (OSError, ValueError, KeyError) as e:
        print(f"summary: cannot read {path}: {e}", file=sys.stderr)
        return 2
    facts.offer(data)
    groups, failures, not_run = {}, [], []
    for run in runs:
        if run.get("error_occurred"):
            line = f"{run['name']}: {run.get('error_message', '')}"
            if not facts.is_not_run(run.get("error_message")):
                failures.append(line)
            elif line not in not_run:
                not_run.append(line)
            continue
        if run.get("run_type") == "aggregate":
            continue
        groups.setdefault(run.get("run_name", run["name"]), []).append(run)
    intervals = data.get("kbench_intervals") or {}
    ctx = data.get("context", {})
    print(f"kbench {ctx.get('kbench_version', '?')} @ {ctx.get('git_sha', '?')[:10]}"
          f"{' (dirty)' if ctx.get('git_dirty') == 'true' else ''}, target={ctx.get('target', '?')}"
          f", librdkafka {ctx.get('librdkafka_version', '?')}"
          f"{', broker ' + ctx['broker_version'] if ctx.get('broker_version') else ''}")
    # p99: latency on open-loop rows, queueing (marked q) on closed-loop ones. CPU us/MiB: the
    # client's and (on a cluster scripts/kafka started) the brokers' cost of a MiB of values.
    header = ("benchmark (median of repetitions)", "reps", "records/s", "MB/s", "ratio",
              "p99_us", "CPU us/MiB", "broker", "interval CV, min-max records/s")
    table = []
    shortfalls, searches = [], []
    for name, reps in groups.items():
        def med(key, reps=reps):
            values = [r[key] for r in reps if key in r]
            return statistics.median(values) if values else None
        items, bps, ratio = med("items_per_second"), med("bytes_per_second"), med("ratio")
        p99, queue = med("p99_us"), med("queue_p99_us")
        spread = interval_spread(intervals.get(name, []))
        table.append((name, len(reps), human(items or None), "%.1f" % ((bps or 0) / 1048576),
                      "-" if ratio is None else "%.3f" % ratio,
                      human(p99) if p99 is not None or queue is None else "q" + human(queue),
                      human(med("cpu_us_per_mb")), human(med("broker_cpu_us_per_mb")),
                      "-" if spread is None else "%.1f %%  %s-%s" % (
                          spread[0] * 100, human(spread[1]), human(spread[2]))))
        if med("max_rate") is not None:
            found = sorted(human(r["max_rate"]) for r in reps)
            searches.append(f"{name}: {human(med('max_rate'))} records/s "
                            f"(repetitions: {', '.join(found)}; closed loop "
                            f"{human(med('closed_loop_rate'))}; p99 at the maximum {human(med('max_rate_p99_us'))} us)")
        short = [r for r in reps if r.get("rate_shortfall", 0) >= 1]
        if short:
            achieved = statistics.median(r["achieved_rate"] for r in short)
            delivered = [r["delivered_rate"] for r in short if "delivered_rate" in r]
            shortfalls.append(f"{name}: {len(short)} of {len(reps)} repetitions more than 1 % "
                              f"short of {human(reps[0]['target_rate'])} records/s (median sent {human(achieved)}"
                              + (f", delivered {human(statistics.median(delivered))}"
                                 if delivered else "") + "; its latency is queueing)")
    if table:
        print(text.table(header, table, align=("left",) + ("right",) * 8))
    ratios = ratio_rows(groups)
    if ratios:
        print("\nreferences (median ratio of records/s, >= 1 means as fast as the reference):")
        print(text.table(("reference", "ratio", "per repetition", "n", "row"), ratios))
    for title, lines in (
            ("maximum sustainable rate (median; sent within 1 % of the target, delivered not short)", searches),
            ("open-loop rows short of their target rate (their latency is at a lower load)", shortfalls),
            (f"{len(not_run)} benchmark(s) not run (the loaded librdkafka lacks what they need)", not_run),
            (f"{len(failures)} benchmark run(s) FAILED", failures)):
        if lines:
            print("\n%s:\n%s" % (title, "\n".join("  " + line for line in lines)))
    return 0


if __name__ == "__main__":
    from kbench.cli import ArgumentParser
    ap = ArgumentParser(prog="kbench.summary", description="Print the summary of a kbench run.")
    ap.add_argument("result", metavar="RESULT.json")
    sys.exit(main(ap.parse_args().result))
