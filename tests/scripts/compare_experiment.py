#!/usr/bin/python3
"""Synthetic whole-profile experiment for scripts/compare's gate (docs/comparing.md).

Each trial draws `rows` in-process benchmarks, `samples` kbench processes per side, each
value base * (1 + N(0, cv)) (normal noise, coefficient of variation cv), and compares the
sides as scripts/compare does (lib/kbench_compare.py, defaults: alpha 0.01, threshold 5 %).
A/A: both sides from the same distribution; counts trials that exit 1 (any false
regression). Planted: the same, with one row `shift` slower on the new side; counts trials
in which that row is a regression, and false regressions among the other rows.
"""

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "lib"))

import kbench_compare as kc  # noqa: E402
import make_json as mj  # noqa: E402

NAME = "Codec/compress/codec:lz4/level:%d/payload:az/record_bytes:100/batch_bytes:65536"


def side(rng, rows, samples, cv, shifted=None, shift=0.0):
    """One side: `samples` processes of one repetition of every row."""
    benches = []
    for i in range(rows):
        for proc in range(samples):
            v = 1e5 * (1.0 + (shift if i == shifted else 0.0)) * (1.0 + rng.gauss(0.0, cv))
            e = mj.entry(NAME % i, i, samples, proc, {"cpu_time": v})
            e["kbench_process"] = proc
            benches.append(e)
    return {"context": dict(mj.CONTEXT), "benchmarks": benches}


def one(rng, rows, samples, cv, shifted=None, shift=0.0):
    base = kc.Side("base", [side(rng, rows, samples, cv)])
    new = kc.Side("new", [side(rng, rows, samples, cv, shifted, shift)])
    result = kc.compare_sides(base, new)
    return result, kc.exit_code(result)


def run(trials=20, rows=100, samples=10, cv=0.05, shift=0.15, seed=1):
    rng = random.Random(seed)
    out = {"trials": trials, "rows": rows, "samples": samples, "cv": cv, "shift": shift,
           "aa_exit": {0: 0, 1: 0, 3: 0}, "aa_exit1": 0, "planted_flagged": 0,
           "planted_false_rows": 0, "planted_exit": {0: 0, 1: 0, 3: 0}}
    for _ in range(trials):
        _, code = one(rng, rows, samples, cv)
        out["aa_exit"][code] += 1
        out["aa_exit1"] += code == 1
        shifted = rng.randrange(rows)
        result, code = one(rng, rows, samples, cv, shifted, shift)
        out["planted_exit"][code] += 1
        flagged = {r["name"] for r in result["regressions"]}
        out["planted_flagged"] += NAME % shifted in flagged
        out["planted_false_rows"] += len(flagged - {NAME % shifted})
    return out


def main():
    from kbench_cli import ArgumentParser
    ap = ArgumentParser(prog="compare_experiment.py", description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--samples", type=int, default=10, help="processes per side")
    ap.add_argument("--cv", type=float, default=0.05)
    ap.add_argument("--shift", type=float, default=0.15)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    o = run(a.trials, a.rows, a.samples, a.cv, a.shift, a.seed)
    print("A/A: %d trials x %d rows, %d vs %d processes, %.0f %% CV: exit 1 in %d, exit 0 in "
          "%d, exit 3 in %d" % (o["trials"], o["rows"], o["samples"], o["samples"],
                                100 * o["cv"], o["aa_exit1"], o["aa_exit"][0], o["aa_exit"][3]))
    print("planted +%.0f %% on one row: flagged in %d of %d trials; false regressions on other "
          "rows: %d; exit 1 in %d" % (100 * o["shift"], o["planted_flagged"], o["trials"],
                                      o["planted_false_rows"], o["planted_exit"][1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
