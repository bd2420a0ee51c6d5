"""Calibration of scripts/compare's gate: family-wise false alarms under A/A, and power.

Many synthetic comparisons at once (numpy arrays of trials x rows x processes), each
judged as compare_sides judges unpaired process samples: the test's parts come from
kbench/stats.py and kbench/verdict.py itself (yuen_parts, family_prior, moderated_p, hl_interval_rank),
and the steps around them are re-implemented here for arrays: Holm's adjustment over the
family, then a regression or improvement where the adjusted p < alpha, the
Hodges-Lehmann shift is at least T and its distribution-free interval excludes 0.
--check runs compare_sides itself on the same draws and counts disagreements.

A value is base * (1 + N(0, cv)) (one kbench process), as in compare_experiment.py.
Families (rows' CVs; 10 vs 10 processes unless said):
  graded-R     R rows, CVs evenly from 3 to 8 % (5 rows: 3, 4, 5, 6, 8 %)
  noisy-R      one row at 20 % CV, R - 1 at 2 %
  unequal      one row, 10 vs 5 processes, the 5 twice as noisy (5 % and 10 %)
  power        100 rows at 5 %, one of them 15 % slower on the new side
A/A families count trials with any regression or improvement (family-wise false alarms);
"power" counts trials in which the slowed row is a regression. Also printed: the rate of
p < 1e-4 of the noisy row (nominal 1e-4) and of p < alpha of the unequal row.
"""

import math
import os
import sys
import time

import numpy as np
from kbench import stats as ks
from kbench import verdict as kc

HERE = os.path.dirname(os.path.abspath(__file__))


def family(name):
    """(base CVs, new CVs, base processes, new processes, shifted row or None)."""
    kind, _, size = name.partition("-")
    if kind == "graded":
        rows = int(size)
        cvs = [0.03, 0.04, 0.05, 0.06, 0.08] if rows == 5 else list(np.linspace(0.03, 0.08, rows))
        return cvs, cvs, 10, 10, None
    if kind == "noisy":
        cvs = [0.20] + [0.02] * (int(size) - 1)
        return cvs, cvs, 10, 10, None
    if kind == "unequal":
        return [0.05], [0.10], 10, 5, None
    if kind == "power":
        return [0.05] * 100, [0.05] * 100, 10, 10, 0
    raise ValueError("unknown family %r" % name)


FAMILIES = (["graded-%d" % r for r in (5, 10, 20, 100)]
            + ["noisy-%d" % r for r in (5, 10, 20, 100)] + ["unequal", "power"])
SHIFT = 0.15


def draw(rng, trials, name):
    """(base, new): arrays trials x rows x processes of positive values."""
    cb, cn, nb, nn, shifted = family(name)
    base = 1.0 + rng.standard_normal((trials, len(cb), nb)) * np.asarray(cb)[None, :, None]
    new = 1.0 + rng.standard_normal((trials, len(cn), nn)) * np.asarray(cn)[None, :, None]
    if shifted is not None:
        new[:, shifted] *= 1.0 + SHIFT
    return np.maximum(base, 1e-3), np.maximum(new, 1e-3)


def holm(p):
    """Holm-adjusted p-values along the last axis (statsmodels' multipletests, for arrays)."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    steps = np.take_along_axis(p, order, axis=-1) * (m - np.arange(m))
    steps = np.minimum(np.maximum.accumulate(steps, axis=-1), 1.0)
    out = np.empty_like(p)
    np.put_along_axis(out, order, steps, axis=-1)
    return out


def gate(base, new, alpha=0.01, threshold=5.0):
    """(verdicts, p, adjusted p): verdicts trials x rows, +1 regression (slower), -1
    improvement, 0 neither, for lower-is-better values."""
    lb, ln = np.log(base), np.log(new)
    diff, s2, d, scale = ks.yuen_parts(lb, ln)
    if s2.shape[-1] >= ks.MIN_MODERATED_ROWS:
        d0, s0sq, total = ks.family_prior(s2, d)
        p, _ = ks.moderated_p(diff, s2, d, scale, d0, s0sq[:, None], total[:, None])
    else:
        p, _ = ks.moderated_p(diff, s2, d, scale)
    p_adj = holm(p)
    verdicts = np.zeros(p.shape, dtype=int)
    k = ks.hl_interval_rank(base.shape[-1], new.shape[-1], alpha)
    for t, r in np.argwhere(p_adj < alpha):
        diffs = np.sort((ln[t, r][:, None] - lb[t, r][None, :]).ravel())
        est = math.expm1(float(np.median(diffs))) * 100.0
        if k is None or abs(est) < threshold:
            continue
        if diffs[k - 1] > 0 or diffs[len(diffs) - k] < 0:
            verdicts[t, r] = 1 if est > 0 else -1
    return verdicts, p, p_adj


def run(name, trials, seed=1, chunk=2000):
    """Counts over `trials` trials of family `name`."""
    rng = np.random.default_rng(seed)
    shifted = family(name)[4]
    out = {"family": name, "trials": 0, "false": 0, "caught": 0, "p_first_1e-4": 0,
           "p_first_alpha": 0}
    while out["trials"] < trials:
        n = min(chunk, trials - out["trials"])
        base, new = draw(rng, n, name)
        verdicts, p, _ = gate(base, new)
        if shifted is not None:
            out["caught"] += int((verdicts[:, shifted] == 1).sum())
            verdicts[:, shifted] = 0
        out["false"] += int((verdicts != 0).any(axis=-1).sum())
        out["p_first_1e-4"] += int((p[:, 0] < 1e-4).sum())
        out["p_first_alpha"] += int((p[:, 0] < 0.01).sum())
        out["trials"] += n
    return out


def side_doc(values, label):
    """Google Benchmark JSON of one side: rows x processes, one repetition each."""
    import make_json as mj
    benches = []
    rows, procs = values.shape
    for i in range(rows):
        for proc in range(procs):
            e = mj.entry(name_of(i), i, procs, proc, {"cpu_time": 1e5 * float(values[i, proc])})
            e["kbench_process"] = proc
            benches.append(e)
    return ks.Side(label, [{"context": dict(mj.CONTEXT), "benchmarks": benches}])


def name_of(i):
    return "Codec/compress/codec:lz4/level:%d/payload:az/record_bytes:100/batch_bytes:65536" % i


def check(name, trials, seed=7):
    """Disagreements between gate() and compare_sides over `trials` trials of `name`:
    (trials whose flagged rows differ, largest relative difference of a p-value)."""
    rng = np.random.default_rng(seed)
    base, new = draw(rng, trials, name)
    verdicts, p, _ = gate(base, new)
    differ, worst = 0, 0.0
    for t in range(trials):
        result = kc.compare_sides(side_doc(base[t], "base"), side_doc(new[t], "new"))
        want = {name_of(r): v for r, v in enumerate(verdicts[t]) if v}
        got = {r["name"]: 1 for r in result["regressions"]}
        got.update({r["name"]: -1 for r in result["improvements"]})
        differ += want != got
        for r in result["rows"]:
            i = int(re_level(r["name"]))
            worst = max(worst, abs(r["p_value"] - p[t, i]) / max(p[t, i], 1e-300))
    return differ, worst


def re_level(name):
    return name.split("level:")[1].split("/")[0]


def main():
    from kbench.cli import ArgumentParser
    ap = ArgumentParser(prog="gate_calibration.py", description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family", action="append", choices=FAMILIES,
                    help="repeatable (default: all)")
    ap.add_argument("--check", type=int, default=0, metavar="N",
                    help="also judge N trials of each family with compare_sides and count "
                         "disagreements")
    a = ap.parse_args()
    if a.trials < 1 or a.check < 0:
        ap.error("--trials must be positive and --check not negative")
    for name in a.family or FAMILIES:
        start = time.time()
        o = run(name, a.trials, a.seed)
        line = "%-10s %d trials: " % (name, o["trials"])
        if name == "power":
            line += "+%.0f %% row caught %d (%.4f); false alarms elsewhere %d (%.4f)" % (
                100 * SHIFT, o["caught"], o["caught"] / o["trials"], o["false"],
                o["false"] / o["trials"])
        else:
            line += "family-wise false alarms %d (%.4f)" % (o["false"], o["false"] / o["trials"])
        if name.startswith("noisy"):
            line += "; noisy row p < 1e-4: %.5f" % (o["p_first_1e-4"] / o["trials"])
        if name == "unequal":
            line += "; p < 0.01: %.4f" % (o["p_first_alpha"] / o["trials"])
        if a.check:
            differ, worst = check(name, a.check)
            line += "; compare_sides disagrees in %d of %d (p within %.1e)" % (differ, a.check,
                                                                              worst)
        print(line + " [%.0f s]" % (time.time() - start), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
