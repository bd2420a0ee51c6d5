#!/usr/bin/python3
"""Per run of run.sh: each repetition's per-second records/s (thousands), and repetition 1
over the median of repetitions 2-6.
    intervals.py r*.json"""
import json
import statistics
import sys

for path in sorted(sys.argv[1:], key=lambda p: int(p.rsplit("/", 1)[-1].split(".")[0][1:])):
    d = json.load(open(path))
    for name, reps in d.get("kbench_intervals", {}).items():
        means = [statistics.mean(r["records_per_second"]) for r in reps]
        print("%s %s  rep 1 / median(rest) %.2f" % (path, name, means[0] / statistics.median(means[1:])))
        print("    " + " ".join(str([round(x / 1000) for x in r["records_per_second"]]) for r in reps))
