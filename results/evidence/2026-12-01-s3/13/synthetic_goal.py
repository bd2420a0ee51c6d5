#!/usr/bin/python3
"""Goal: on a synthetic history of 60 commits per series with this machine's noise, a planted
5 % step in timing data is located within +-1 commit in >= 9 of 10 series, and pure-noise
series raise a change in <= 1 of 10.

Noise: the real runs in noise/ (noise_runs.sh: scripts/bench --mock, 5 processes each, 12
in-process rows, one run after another on this machine while other helpers built and
tested). Each row's cpu_time is divided by that row's median over all runs and processes;
a synthetic run of commit i takes one real run at random (with replacement) and uses its 5
process values, so both the drift a run shares and the spread between its processes are
this machine's. (Resampling runs loses any slow drift over hours: neighbouring commits are
no more alike than distant ones.)

Each trial: 10 series with a +5 % step (slower) at commit 20 + 2k (k = 0..9) and 10 pure-noise
series, series j on real row j % 12; 60 JSON files (one per commit, 20 benchmarks, 5
processes), `scripts/history add`, `scripts/history changes --json`. A step series counts as
located when it has a change whose first commit is within +-1 of the planted one and no
other change; a noise series counts as false when it has any change.
    results/evidence/2026-12-01-s3/13/synthetic_goal.py [TRIALS]   (writes synthetic.txt)
"""

import glob
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

# GOAL_DIR (added in session 5): read noise/ from and write synthetic*.txt to another
# evidence folder, e.g. GOAL_DIR=results/evidence/2026-12-01-s5/13.
SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
HERE = os.path.abspath(os.environ.get("GOAL_DIR") or SCRIPT_DIR)
ROOT = os.path.abspath(os.path.join(SCRIPT_DIR, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "scripts"))
import history_json as hj  # noqa: E402
import make_json  # noqa: E402


def real_noise():
    """{row: [[process value / row median, ...] per run]}"""
    runs = {}
    for path in sorted(glob.glob(os.path.join(HERE, "noise", "run-*.json"))):
        with open(path) as f:
            data = json.load(f)
        per = {}
        for b in data["benchmarks"]:
            if b.get("run_type") == "iteration" and not b.get("error_occurred"):
                per.setdefault(b["name"], {}).setdefault(b.get("kbench_process", 0), []).append(
                    b["cpu_time"])
        for name, procs in per.items():
            runs.setdefault(name, []).append([statistics.median(v) for v in procs.values()])
    out = {}
    for name, rs in runs.items():
        med = statistics.median([v for r in rs for v in r])
        out[name] = [[v / med for v in r] for r in rs]
    return out


def spread(noise):
    lines = []
    for name, rs in sorted(noise.items()):
        meds = [statistics.median(r) for r in rs]
        within = statistics.median([statistics.stdev(r) / statistics.fmean(r) for r in rs])
        lines.append("  %-100s runs %2d  between-run CV of run medians %5.2f %%  within-run "
                     "CV of processes %5.2f %%" % (name, len(rs), 100 * statistics.stdev(meds)
                                                   / statistics.fmean(meds), 100 * within))
    return lines


def trial(noise, seed, tmp):
    rng = random.Random(seed)
    rows = sorted(noise)
    series = []
    for k in range(10):
        series.append(("Step/s:%d/row:%d" % (k, k % 12), rows[k % 12], 20 + 2 * k))
    for k in range(10):
        series.append(("Noise/s:%d/row:%d" % (k, (k + 10) % 12), rows[(k + 10) % 12], None))
    files = []
    shas = [hj.sha_of(i, "goal-%d" % seed) for i in range(60)]
    for i in range(60):
        benches = []
        for idx, (name, row, at) in enumerate(series):
            run = rng.choice(noise[row])
            for p, r in enumerate(run):
                v = 1000.0 * r * (1.05 if at is not None and i >= at else 1.0)
                e = make_json.entry(name, idx, len(run), p, {"cpu_time": v})
                e["kbench_process"] = p
                benches.append(e)
        ctx = dict(make_json.CONTEXT, git_sha=shas[i], date="2026-01-01T%02d:%02d:00+00:00"
                   % (i // 60, i % 60))
        path = os.path.join(tmp, "run-%02d.json" % i)
        make_json.write(path, {"context": ctx, "benchmarks": benches})
        files.append(path)
    db = os.path.join(tmp, "h.sqlite")
    hist = os.path.join(ROOT, "scripts", "history")
    subprocess.run([hist, "--db", db, "add", "--repo", tmp] + files, check=True,
                   capture_output=True)
    out = os.path.join(tmp, "changes.json")
    p = subprocess.run([hist, "--db", db, "changes", "--json", out], capture_output=True,
                       text=True)
    with open(out) as f:
        groups = json.load(f)
    index = {s: i for i, s in enumerate(shas)}
    found = {}
    for g in groups:
        for m in g["members"]:
            found.setdefault(m["benchmark"], []).append((index[m["after_commit"]],
                                                         round(m["change_pct"], 2)))
    located = false = 0
    detail = []
    for name, _, at in series:
        got = found.get(name, [])
        if at is None:
            false += bool(got)
        else:
            ok = len(got) == 1 and abs(got[0][0] - at) <= 1
            located += ok
        detail.append("    %-22s planted %-4s found %s" % (name, at if at is not None else "-",
                                                           got or "-"))
    return located, false, p.returncode, detail


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    # SCALE < 1 shrinks every residual (value / median - 1) by that factor: the same shape
    # of noise, quieter (what a machine without five neighbours would show). Not the goal's
    # condition; written to synthetic-scaled-SCALE.txt.
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    noise = real_noise()
    if scale != 1.0:
        noise = {k: [[1.0 + (v - 1.0) * scale for v in r] for r in rs] for k, rs in noise.items()}
    lines = ["$ results/evidence/2026-12-01-s3/13/synthetic_goal.py %d%s"
             % (trials, " %g" % scale if scale != 1.0 else ""),
             "real runs: %d; spread per row:" % len(next(iter(noise.values())))]
    lines += spread(noise)
    total_loc = total_false = 0
    for seed in range(1, trials + 1):
        with tempfile.TemporaryDirectory(prefix="h13-goal.") as tmp:
            located, false, rc, detail = trial(noise, seed, tmp)
        total_loc += located
        total_false += false
        lines.append("trial %d: 5 %% step located within +-1 commit in %d of 10 series; "
                     "noise series with a change: %d of 10 (changes exit %d)"
                     % (seed, located, false, rc))
        lines += detail
    lines.append("all trials: located %d of %d, false %d of %d"
                 % (total_loc, 10 * trials, total_false, 10 * trials))
    text = "\n".join(lines) + "\n"
    name = "synthetic.txt" if scale == 1.0 else "synthetic-scaled-%g.txt" % scale
    with open(os.path.join(HERE, name), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
