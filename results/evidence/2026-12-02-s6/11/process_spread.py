#!/usr/bin/python3
"""Per Produce row of a scripts/bench run: the spread of records/s between processes (CV,
min-max) and the client's cores per process. For two runs given, the median CV of each.
    process_spread.py RUN_DIR/kbench.json ..."""
import json
import statistics
import sys

for path in sys.argv[1:]:
    d = json.load(open(path))
    rows = {}
    for b in d["benchmarks"]:
        if b.get("run_type") == "iteration" and not b.get("error_occurred"):
            rows.setdefault(b["name"], []).append((b["items_per_second"], b.get("client_cpu_cores", 0)))
    print(path)
    cvs = []
    for name, v in sorted(rows.items()):
        rates = [r for r, _ in v]
        cv = statistics.stdev(rates) / statistics.mean(rates) * 100
        cvs.append(cv)
        print("  CV %5.1f %%  %6.2f-%6.2f M/s  cores %s  %s" % (
            cv, min(rates) / 1e6, max(rates) / 1e6, " ".join("%.2f" % c for _, c in v), name))
    print("  %d rows: median CV %.1f %% (quartiles %.1f-%.1f %%)" % (
        len(cvs), statistics.median(cvs), *statistics.quantiles(cvs, n=4)[::2]))
