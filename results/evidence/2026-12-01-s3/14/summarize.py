#!/usr/bin/python3
"""Figures of the issue-14 goals from the raw files goals.sh wrote (argument: that folder)."""
import glob
import json
import os
import statistics
import sys

raw = sys.argv[1]


def row(path):
    return json.load(open(path))["benchmarks"][0]


print("goal 1: 3 agents x rate 5000 (3R = 15000), merged achieved rate")
for p in sorted(glob.glob(os.path.join(raw, "goal1-round*.json"))):
    d = json.load(open(p))
    b = d["benchmarks"][0]
    t0 = float(open(p[:-5] + ".t0").read())
    firsts = []
    for a in d["kbench_agents"].values():
        s = a["kbench_intervals"][a["benchmarks"][0]["run_name"]][0]
        firsts.append(s["start_unix_seconds"] - 1.0)  # window start - 1 s warm-up
    print("  %s: achieved %.1f/s (%.4f x 3R), delivered in window %.1f/s, p99 %d us, "
          "common window %.3f s; first record %.2f s after the command (latest agent %.2f s)"
          % (os.path.basename(p), b["achieved_rate"], b["achieved_rate"] / 15000,
             b["items_per_second"], b["p99_us"], b["window_seconds"], min(firsts) - t0,
             max(firsts) - t0))
for tag in ("open", "closed"):
    print("goal 2 (%s loop): one agent through Trogdor vs kbench started directly in the same "
          "namespace, interleaved" % tag)
    tro, dire = [], []
    for i in (1, 2, 3):
        t = os.path.join(raw, "goal2-%s-trogdor-round%d.json" % (tag, i))
        d = os.path.join(raw, "goal2-%s-direct-round%d.json" % (tag, i))
        if not (os.path.exists(t) and os.path.exists(d)):
            continue
        rt, rd = row(t), row(d)
        tro.append(rt["items_per_second"])
        dire.append(rd["items_per_second"])
        print("  round %d: trogdor %.0f/s p99 %s us, direct %.0f/s p99 %s us, ratio %.4f"
              % (i, rt["items_per_second"], rt.get("p99_us", rt.get("queue_p99_us")),
                 rd["items_per_second"], rd.get("p99_us", rd.get("queue_p99_us")),
                 rt["items_per_second"] / rd["items_per_second"]))
    if tro:
        print("  median trogdor / median direct = %.4f" % (statistics.median(tro) / statistics.median(dire)))
