#!/usr/bin/python3
"""Mock, 1000 partitions: records/s and CPU per record of send with librdkafka's statistics
every 100 ms (the default) or every 5 s, and of bare_producev, per config over all its
processes' repetitions (3 processes x 3 repetitions each, interleaved by run.sh).
    summarize.py DIR..."""
import glob
import json
import statistics
import sys

for d in sys.argv[1:]:
    print(d)
    for cfg in ("s100", "s5000", "bare"):
        ips, app, rdk = [], [], []
        for f in sorted(glob.glob(f"{d}/{cfg}.*.json")):
            for b in json.load(open(f))["benchmarks"]:
                if b.get("run_type") == "iteration" and not b.get("error_occurred"):
                    ips.append(b["items_per_second"])
                    app.append(b["app_cpu_us_per_record"])
                    rdk.append(b["rdkafka_cpu_us_per_record"])
        print("  %-5s n=%d  median %7.0f records/s  app CPU %.3f us/record  librdkafka CPU %.3f us/record"
              % (cfg, len(ips), statistics.median(ips), statistics.median(app), statistics.median(rdk)))
