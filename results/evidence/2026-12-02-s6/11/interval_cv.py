#!/usr/bin/python3
"""Interval CV of the live windowed rows of a run: per row, the median over its repetitions
of interval_cv (the coefficient of variation of the per-second records/s inside a window).
    interval_cv.py RUN_DIR/kbench.json"""
import json
import statistics
import sys

d = json.load(open(sys.argv[1]))
rows = {}
for b in d["benchmarks"]:
    if b.get("run_type") == "iteration" and "interval_cv" in b and not b.get("error_occurred"):
        rows.setdefault(b["name"], []).append(b["interval_cv"])
meds = []
for name, v in sorted(rows.items()):
    m = statistics.median(v) * 100
    meds.append(m)
    print("%6.1f %%  (%d reps)  %s" % (m, len(v), name))
print("%d rows: %d below 10 %%; median %.1f %%, range %.1f-%.1f %%" % (
    len(meds), sum(1 for m in meds if m < 10), statistics.median(meds), min(meds), max(meds)))
