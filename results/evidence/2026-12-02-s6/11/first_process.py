#!/usr/bin/python3
"""Per live windowed row of a scripts/bench run: process 1's records/s over the median of the
other processes'. Closed-loop rows only in the count (open-loop rows run at their target).
    first_process.py RUN_DIR/kbench.json ..."""
import json
import statistics
import sys

closed = []
for path in sys.argv[1:]:
    d = json.load(open(path))
    rows = {}
    for b in d["benchmarks"]:
        if b.get("run_type") == "iteration" and "window_seconds" in b and not b.get("error_occurred"):
            rows.setdefault(b["name"], {})[b["kbench_process"]] = b["items_per_second"]
    print(path)
    for name, by_process in sorted(rows.items()):
        if len(by_process) < 3:
            continue
        first = min(by_process)
        r = by_process[first] / statistics.median(v for p, v in by_process.items() if p != first)
        is_closed = "rate:" not in name
        if is_closed:
            closed.append(r)
        print("  %.2f %s %s" % (r, "closed" if is_closed else "open  ", name))
print("%d closed-loop rows: %d below 0.95; range %.2f-%.2f" % (
    len(closed), sum(1 for r in closed if r < 0.95), min(closed), max(closed)))
