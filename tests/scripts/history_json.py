"""Synthetic histories for the tests of scripts/history: one kbench-shaped JSON per commit
(tests/scripts/make_json.py's format, merged processes), with steps planted at known
commits.

A series is (name, base value, {commit index: relative step}); a step holds from its
commit on. Noise is drawn per run (run_noise: drift shared by the run's processes, the
spread between launches of scripts/bench) and per process (process_noise), each a normal
with that relative standard deviation, seeded.
"""

import hashlib
import os
import random
from datetime import datetime, timedelta, timezone

import make_json

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def sha_of(i, salt="kbench"):
    return hashlib.sha1(("%s-%d" % (salt, i)).encode()).hexdigest()


def level(steps, i):
    f = 1.0
    for at, step in steps.items():
        if i >= at:
            f *= 1.0 + step
    return f


def write_history(out_dir, n_commits, series, seed=1, run_noise=0.01, process_noise=0.005,
                  processes=5, context=None, metric="cpu_time"):
    """Writes run-NNN.json for each commit; returns [(path, sha)] oldest first."""
    rng = random.Random(seed)
    os.makedirs(out_dir, exist_ok=True)
    out = []
    for i in range(n_commits):
        benches = []
        for idx, (name, base, steps) in enumerate(series):
            drift = 1.0 + rng.gauss(0.0, run_noise)
            for p in range(processes):
                v = base * level(steps, i) * drift * (1.0 + rng.gauss(0.0, process_noise))
                e = make_json.entry(name, idx, processes, p, {metric: v, "real_time": v})
                e["kbench_process"] = p
                benches.append(e)
        ctx = dict(make_json.CONTEXT)
        ctx.update({"git_sha": sha_of(i), "date": (T0 + timedelta(hours=i)).isoformat(),
                    "kbench_merged_runs": processes})
        if context:
            ctx.update(context)
        path = os.path.join(out_dir, "run-%03d.json" % i)
        make_json.write(path, {"context": ctx, "benchmarks": benches})
        out.append((path, ctx["git_sha"]))
    return out
