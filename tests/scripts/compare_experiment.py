"""Synthetic whole-profile experiment for scripts/compare's gate (docs/comparing.md).

Each trial draws `rows` in-process benchmarks, `samples` kbench processes per side, each
value base * noise, and compares the sides as scripts/compare does (kbench/stats.py and kbench/verdict.py,
defaults: alpha 0.01, threshold 5 %). Noise, with coefficient of variation about cv:
  normal    1 + N(0, cv)
  t3        exp(cv * T3 / sqrt(3)): heavy tails, Student's t with 3 degrees of freedom
  outliers  1 + N(0, cv), and one process in twenty 30 % slower (a neighbour's burst)
--mixed-cv gives 70 rows cv / 3 and 30 rows 2.4 cv instead of one cv for all (quiet
in-process rows beside noisy live ones), the planted row among the quiet ones.
--paired makes the sides interleaved rounds as scripts/bench-commits runs them: round i
moves every row of both sides by one factor 1 + N(0, --drift) (the machine's speed that
round), and compare pairs process i of base with process i of new.
A/A: both sides from the same distribution; counts trials that exit 1 (any false
regression). Planted: the same, with one row `shift` slower on the new side; counts trials
in which that row is a regression, and false regressions among the other rows.
"""

import math
import os
import random
import sys

import make_json as mj
from kbench import stats as ks
from kbench import verdict as kc

HERE = os.path.dirname(os.path.abspath(__file__))


NAME = "Codec/compress/codec:lz4/level:%d/payload:az/record_bytes:100/batch_bytes:65536"


def draw(rng, cv, noise):
    if noise == "t3":
        return math.exp(cv * rng.gauss(0.0, 1.0) / math.sqrt(rng.gammavariate(1.5, 2.0) / 3.0)
                        / math.sqrt(3.0))
    v = 1.0 + rng.gauss(0.0, cv)
    if noise == "outliers" and rng.random() < 0.05:
        v *= 1.3
    return v


def row_cv(i, rows, cv, mixed):
    if not mixed:
        return cv
    return cv / 3.0 if i < rows * 7 // 10 else cv * 2.4


def side(rng, rows, samples, cv, shifted=None, shift=0.0, noise="normal", mixed=False,
         rounds=None):
    """One side: `samples` processes of one repetition of every row; `rounds`, when given,
    the speed factor of each process's round."""
    benches = []
    for i in range(rows):
        for proc in range(samples):
            v = (1e5 * (1.0 + (shift if i == shifted else 0.0))
                 * draw(rng, row_cv(i, rows, cv, mixed), noise)
                 * (rounds[proc] if rounds else 1.0))
            e = mj.entry(NAME % i, i, samples, proc, {"cpu_time": v})
            e["kbench_process"] = proc
            benches.append(e)
    context = dict(mj.CONTEXT)
    if rounds:
        context[ks.PAIRING_KEY] = "synthetic rounds"
    return {"context": context, "benchmarks": benches}


def one(rng, rows, samples, cv, shifted=None, shift=0.0, noise="normal", mixed=False,
        drift=None):
    rounds = ([max(0.05, 1.0 + rng.gauss(0.0, drift)) for _ in range(samples)]
              if drift is not None else None)
    base = ks.Side("base", [side(rng, rows, samples, cv, noise=noise, mixed=mixed,
                                 rounds=rounds)])
    new = ks.Side("new", [side(rng, rows, samples, cv, shifted, shift, noise, mixed, rounds)])
    result = kc.compare_sides(base, new)
    return result, kc.exit_code(result)


def run(trials=20, rows=100, samples=10, cv=0.05, shift=0.15, seed=1, noise="normal",
        mixed=False, drift=None):
    rng = random.Random(seed)
    out = {"trials": trials, "rows": rows, "samples": samples, "cv": cv, "shift": shift,
           "aa_exit": {0: 0, 1: 0, 3: 0}, "aa_exit1": 0, "planted_flagged": 0,
           "planted_false_rows": 0, "planted_exit": {0: 0, 1: 0, 3: 0}}
    for _ in range(trials):
        result, code = one(rng, rows, samples, cv, noise=noise, mixed=mixed, drift=drift)
        out["paired"] = result["paired"]
        out["aa_exit"][code] += 1
        out["aa_exit1"] += code == 1
        shifted = rng.randrange(rows * 7 // 10 if mixed else rows)
        result, code = one(rng, rows, samples, cv, shifted, shift, noise, mixed, drift)
        out["planted_exit"][code] += 1
        flagged = {r["name"] for r in result["regressions"]}
        out["planted_flagged"] += NAME % shifted in flagged
        out["planted_false_rows"] += len(flagged - {NAME % shifted})
    return out


def main():
    from kbench.cli import ArgumentParser
    ap = ArgumentParser(prog="compare_experiment.py", description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--samples", type=int, default=10, help="processes per side")
    ap.add_argument("--cv", type=float, default=0.05)
    ap.add_argument("--shift", type=float, default=0.15)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--noise", choices=("normal", "t3", "outliers"), default="normal")
    ap.add_argument("--mixed-cv", action="store_true")
    ap.add_argument("--paired", action="store_true")
    ap.add_argument("--drift", type=float, default=0.10,
                    help="with --paired: CV of the rounds' speed (default 0.10)")
    a = ap.parse_args()
    if a.trials < 1 or a.rows < 1 or a.samples < 1 or a.cv <= 0 or a.drift < 0:
        ap.error("--trials, --rows, --samples and --cv must be positive, --drift not negative")
    o = run(a.trials, a.rows, a.samples, a.cv, a.shift, a.seed, a.noise, a.mixed_cv,
            a.drift if a.paired else None)
    print("A/A: %d trials x %d rows, %d vs %d processes%s, %.0f %% CV%s, %s noise: exit 1 in "
          "%d, exit 0 in %d, exit 3 in %d"
          % (o["trials"], o["rows"], o["samples"], o["samples"],
             " in paired rounds (%.0f %% round drift)" % (100 * a.drift) if o["paired"] else "",
             100 * o["cv"], " (mixed)" if a.mixed_cv else "", a.noise, o["aa_exit1"],
             o["aa_exit"][0], o["aa_exit"][3]))
    print("planted +%.0f %% on one row: flagged in %d of %d trials; false regressions on other "
          "rows: %d; exit 1 in %d" % (100 * o["shift"], o["planted_flagged"], o["trials"],
                                      o["planted_false_rows"], o["planted_exit"][1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
