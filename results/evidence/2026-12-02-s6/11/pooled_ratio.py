#!/usr/bin/python3
"""send / bare_producev per process (both rows ran in the same process, the reference's order
alternating), pooled over several runs: the median ratio and how many processes.
    pooled_ratio.py RUN/kbench.json...   (the runs' merged JSON, scripts/bench)"""
import json
import statistics
import sys

ratios = {}
for path in sys.argv[1:]:
    d = json.load(open(path))
    per = {}
    for b in d["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        parts = b["name"].split("/")
        key = "/".join(parts[2:])
        per.setdefault((key, b.get("kbench_process")), {})[parts[1]] = b["items_per_second"]
    for (key, _), v in per.items():
        if "send" in v and "bare_producev" in v:
            ratios.setdefault(key, []).append(v["send"] / v["bare_producev"])
for key, r in sorted(ratios.items()):
    r.sort()
    print("send / bare_producev %.3f median over %d processes (quartiles %.3f-%.3f)  %s" % (
        statistics.median(r), len(r), r[len(r) // 4], r[3 * len(r) // 4], key))
