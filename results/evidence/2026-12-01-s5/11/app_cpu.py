#!/usr/bin/python3
"""Application-thread CPU per record (app_cpu_us_per_record), send against its
bare_producev reference, medians over a run's processes.
    app_cpu.py RUN/kbench.json"""
import json
import statistics
import sys

d = json.load(open(sys.argv[1]))
rows = {}
for b in d["benchmarks"]:
    if b.get("run_type") != "iteration" or "app_cpu_us_per_record" not in b:
        continue
    parts = b["name"].split("/")
    rows.setdefault("/".join(parts[2:]), {}).setdefault(parts[1], []).append(
        b["app_cpu_us_per_record"])
for key, v in sorted(rows.items()):
    if "send" in v and "bare_producev" in v:
        s, r = statistics.median(v["send"]), statistics.median(v["bare_producev"])
        print("app CPU us/record: send %.3f, bare_producev %.3f, send/bare %.2f  %s" % (
            s, r, s / r, key))
