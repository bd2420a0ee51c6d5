#!/usr/bin/python3
"""Verdict rate of an A/A pair: of the benchmarks compared, how many got a verdict (not
inconclusive) on their primary metric (the first metric scripts/compare judges: time, or
throughput for windowed rows), and how many row x metric cells did.
    verdict_rate.py VERDICT.json   (from scripts/compare A B --out VERDICT.json)"""
import json
import sys

v = json.load(open(sys.argv[1]))
rows = [r for k in ("regressions", "improvements", "unchanged", "inconclusive") for r in v[k]]
order = {}
for k in ("regressions", "improvements", "unchanged", "inconclusive"):
    for r in v[k]:
        order.setdefault(r["name"], []).append((r["metric"], k))
# compare lists a benchmark's metrics in judging order within each verdict list; the primary
# metric is the time metric or, on windowed rows, items_per_second / max_rate.
primary = {}
for r in rows:
    m = r["metric"]
    rank = {"cpu_time": 0, "real_time": 0, "max_rate": 0, "items_per_second": 1}.get(m, 2)
    if r["name"] not in primary or rank < primary[r["name"]][0]:
        primary[r["name"]] = (rank, m, r["verdict"], r)
n = len(primary)
judged = sum(1 for _, _, verdict, _ in primary.values() if verdict != "inconclusive")
cells = sum(1 for r in rows if r["verdict"] != "inconclusive")
by = {}
for _, _, verdict, _ in primary.values():
    by[verdict] = by.get(verdict, 0) + 1
print("primary metric: %d of %d benchmarks reached a verdict (%.0f %%): %s" % (
    judged, n, 100.0 * judged / n, ", ".join("%s %d" % kv for kv in sorted(by.items()))))
print("row x metric: %d of %d cells reached a verdict (%.0f %%)" % (
    cells, len(rows), 100.0 * cells / len(rows)))
print("errored: %d, only in base: %d, only in new: %d, exit code %d" % (
    len(v["errored"]), len(v["only_in_base"]), len(v["only_in_new"]), v["exit_code"]))
widths = sorted((r["ci_high_pct"] - r["ci_low_pct"]) / 2.0 for _, _, _, r in primary.values()
                if r.get("ci_low_pct") is not None and r.get("ci_high_pct") is not None)
if widths:
    print("primary metric: half-width of the %g %% interval of the shift: median %.1f %%, "
          "quartiles %.1f-%.1f %% (unchanged needs the whole interval inside +-%g %%)" % (
              100 * (1 - 2 * v["alpha"]), widths[len(widths) // 2], widths[len(widths) // 4],
              widths[3 * len(widths) // 4], v["threshold_pct"]))
if v.get("machine_drift"):
    print("machine drift: %s" % v["machine_drift"])
