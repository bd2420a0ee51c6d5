#!/usr/bin/python3
"""ratios.py DIR N: per benchmark, the median over rounds 1..N of new/base (B_i / A_i, round i
ran back to back), for cpu_time (CPU-bound rows) or items_per_second (Produce, Consume)."""
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
def load(side, i):
    with open("%s/%s%d/kbench.json" % (d, side, i)) as f:
        return {b["name"]: b for b in json.load(f)["benchmarks"] if b.get("run_type") == "iteration"}
A = [load("A", i) for i in range(1, n + 1)]
B = [load("B", i) for i in range(1, n + 1)]
rows = []
for name in sorted(A[0]):
    wall = name.startswith(("Produce/", "Consume/"))
    metric = "items_per_second" if wall else "cpu_time"
    r = []
    for a, b in zip(A, B):
        if name in a and name in b and a[name].get(metric) and b[name].get(metric) and not a[name].get("error_occurred") and not b[name].get("error_occurred"):
            r.append(b[name][metric] / a[name][metric])
    if r:
        rows.append((statistics.median(r), min(r), max(r), metric, name))
for med, lo, hi, metric, name in rows:
    print("%7.3f  [%6.3f, %6.3f]  %-16s %s" % (med, lo, hi, metric, name))
meds = [m for m, *_ in rows]
print("rows %d; median of the per-row medians %.3f; rows within +-5 %%: %d, within +-10 %%: %d" % (
    len(rows), statistics.median(meds), sum(abs(m - 1) <= 0.05 for m in meds), sum(abs(m - 1) <= 0.10 for m in meds)))
