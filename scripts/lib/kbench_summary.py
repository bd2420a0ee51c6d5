#!/usr/bin/python3
"""Prints a compact table of a kbench JSON result: the median of each benchmark's
repetitions, with throughput and the counters that matter for its family."""

import json
import statistics
import sys


def human(value, unit=""):
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.2f}{suffix}{unit}"
    return f"{value:.3g}{unit}"


def main(path):
    try:
        with open(path) as f:
            data = json.load(f)
        runs = data["benchmarks"]
    except (OSError, ValueError, KeyError) as e:
        print(f"summary: cannot read {path}: {e}", file=sys.stderr)
        return 2
    groups, failures = {}, []
    for run in runs:
        if run.get("error_occurred"):
            failures.append(f"{run['name']}: {run.get('error_message', '')}")
            continue
        if run.get("run_type") == "aggregate":
            continue
        groups.setdefault(run.get("run_name", run["name"]), []).append(run)
    ctx = data.get("context", {})
    print(f"kbench {ctx.get('kbench_version', '?')} @ {ctx.get('git_sha', '?')[:10]}"
          f"{' (dirty)' if ctx.get('git_dirty') == 'true' else ''}, target={ctx.get('target', '?')}"
          f", librdkafka {ctx.get('librdkafka_version', '?')}"
          f"{', broker ' + ctx['broker_version'] if ctx.get('broker_version') else ''}")
    width = max((len(n) for n in groups), default=10)
    print(f"{'benchmark (median of repetitions)':<{width}}  {'reps':>4}  {'records/s':>10}  "
          f"{'MB/s':>9}  {'ratio':>6}  {'p99_us':>8}")
    for name, reps in groups.items():
        def med(key):
            values = [r[key] for r in reps if key in r]
            return statistics.median(values) if values else None
        items, bps, ratio, p99 = med("items_per_second"), med("bytes_per_second"), med("ratio"), med("p99_us")
        print(f"{name:<{width}}  {len(reps):>4}  {human(items) if items else '-':>10}  "
              f"{bps / 1048576 if bps else 0:>9.1f}  {format(ratio, '.3f') if ratio is not None else '-':>6}  "
              f"{human(p99) if p99 is not None else '-':>8}")
    if failures:
        print(f"\n{len(failures)} benchmark run(s) FAILED:")
        for f in failures:
            print(f"  {f}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: kbench_summary.py RESULT.json", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
