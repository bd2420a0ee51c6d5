#!/usr/bin/python3
"""An upper bound for goal 1 at this machine's noise: how often can ANY method place a 5 %
step within +-1 commit, given the noise of the real runs in noise/? The oracle knows there is
exactly one step and its size; it picks the split that best fits a two-level model (least
squares on log run medians; the maximum-likelihood location for a known single step under
Gaussian noise). E-Divisive, which knows neither, cannot do better on average.

Noise: each synthetic commit takes one real run (with replacement) of the same row, as
synthetic_goal.py does, and uses the median of its processes.
    [GOAL_DIR=DIR] results/evidence/2026-12-01-s5/13/oracle_bound.py [SCALE]   (default 1.0;
    GOAL_DIR: another folder's noise/, default this one's)
"""
import math
import os
import random
import statistics
import sys

# The noise reader of session 3's synthetic_goal.py, pointed at this folder's noise/.
HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("GOAL_DIR", HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "2026-12-01-s3", "13"))
import synthetic_goal as g  # noqa: E402

scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
noise = g.real_noise()
rng = random.Random(7)
rows = sorted(noise)
hits = total = 0
for trial in range(400):
    row = rows[trial % len(rows)]
    at = 20 + 2 * (trial % 10)
    xs = []
    for i in range(60):
        run = rng.choice(noise[row])
        v = 1.0 + (statistics.median(run) - 1.0) * scale
        xs.append(math.log(v * (1.05 if i >= at else 1.0)))
    best, best_k = None, None
    for k in range(2, 59):
        a, b = xs[:k], xs[k:]
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        if mb - ma <= 0:  # the oracle knows the step is a slowdown
            continue
        sse = sum((x - ma) ** 2 for x in a) + sum((x - mb) ** 2 for x in b)
        if best is None or sse < best:
            best, best_k = sse, k
    total += 1
    hits += best_k is not None and abs(best_k - at) <= 1
print("noise scale %.2f: oracle located a 5 %% step within +-1 commit in %d of %d series "
      "(%.0f %%), i.e. about %.1f of 10" % (scale, hits, total, 100.0 * hits / total,
                                            10.0 * hits / total))
