"""Tests of the statistics that decide scripts/compare's verdicts (kbench/stats.py and kbench/verdict.py):
the variance prior against limma's reference values, the trimmed parts against scipy, the
Welch-type Yuen test, the moderated null's uniformity and level, processes against
repetitions, and a short run of the calibration script (tests/scripts/gate_calibration.py)."""

import math
import os
import random
import unittest

import make_json as mj
from kbench import stats as ks
from kbench import verdict as kc

HERE = os.path.dirname(os.path.abspath(__file__))


CODEC = mj.CODEC % ("zstd", 3)

# limma 3.54.1's fitFDist (Debian r-bioc-limma), printed with 17 digits by
#   library(limma); f <- fitFDist(x, df1); formatC(c(f$scale, f$df2), digits=17, format="g")
# x, df1, scale (s0^2), df2 (d0): a spread family, unequal df (Welch), variances alike (inf),
# one outlier, and a zero variance (offset to 1e-5 of the median, as limma does).
LIMMA_FITFDIST = [
    ([0.0021, 0.0034, 0.0018, 0.0052, 0.0027, 0.0041, 0.0012, 0.0030], 14,
     0.0027888667051627304, 30.263556586025562),
    ([9.0, 16.0, 25.0, 36.0, 64.0], [12.4, 13.1, 9.7, 13.9, 11.2],
     22.230944875649111, 6.1476968739082318),
    ([1.00, 1.01, 0.99, 1.02, 0.98, 1.00], 14, 1.0, math.inf),
    ([4e-4, 3.5e-4, 5.2e-4, 4.1e-4, 4.4e-4, 3.9e-4, 4.7e-4, 0.04], 7,
     0.00041547321198059321, 1.6124303934080515),
    ([2.5, 0.0, 3.1, 1.9, 2.2, 2.8], 7, 0.015337052129142098, 0.43923713619928045),
]


class TestPrior(unittest.TestCase):
    def test_squeeze_variances_equals_limma_fitfdist(self):
        for x, df1, scale, df2 in LIMMA_FITFDIST:
            d0, s0sq = ks.squeeze_variances(x, df1)
            self.assertAlmostEqual(s0sq / scale, 1.0, places=10, msg=x)
            if math.isinf(df2):
                self.assertTrue(math.isinf(d0), x)
            else:
                self.assertAlmostEqual(d0 / df2, 1.0, places=10, msg=x)

    def test_squeeze_variances_takes_many_families_at_once(self):
        import numpy as np
        x = np.array([LIMMA_FITFDIST[0][0], LIMMA_FITFDIST[3][0]])
        d0, s0sq = ks.squeeze_variances(x, 7)
        for i in range(2):
            self.assertAlmostEqual(d0[i], ks.squeeze_variances(list(x[i]), 7)[0])
            self.assertAlmostEqual(s0sq[i], ks.squeeze_variances(list(x[i]), 7)[1])

    def test_a_small_family_takes_the_lower_bound_of_the_prior_df(self):
        x, df1, _, df2 = LIMMA_FITFDIST[1]
        d0, _ = ks.squeeze_variances(x, df1, coverage=ks.PRIOR_DF_COVERAGE)
        self.assertLess(d0, df2 / 2)  # five rows: far below the moment estimate
        many = [v * f for v in x for f in (0.9, 1.0, 1.1, 0.95, 1.05) * 4]
        d0_many, _ = ks.squeeze_variances(many, 12, coverage=ks.PRIOR_DF_COVERAGE)
        d0_est, _ = ks.squeeze_variances(many, 12)
        self.assertGreater(d0_many, 0.8 * d0_est)  # a hundred rows: near the estimate

    def test_one_noisy_row_among_quiet_ones_keeps_its_own_variance(self):
        # One row at 20 % CV among 99 at 2 %: moderated toward the quiet rows' variance its
        # null p-values were far too small (p < 1e-4 at 42 times the nominal rate).
        rng = random.Random(3)
        small = 0
        trials = 150
        for _ in range(trials):
            rows = []
            for i in range(100):
                cv = 0.20 if i == 0 else 0.02
                b = [math.log(1 + rng.gauss(0, cv)) for _ in range(10)]
                n = [math.log(1 + rng.gauss(0, cv)) for _ in range(10)]
                rows.append({"_stat": ks.location_stat(b, n)})
            kc.moderate_family(rows)
            small += rows[0]["p_value"] < 0.01
            self.assertLess(rows[0]["prior_df"] or 0.0, 1.0)  # it stands alone
            self.assertGreater(rows[1]["prior_df"], 2)  # the quiet rows are still moderated
        self.assertLessEqual(small, 6)  # nominal 1.5 of 150

    def test_noisy_row_null_p_values_keep_their_level(self):
        import gate_calibration as gc
        import numpy as np
        rng = np.random.default_rng(11)
        b, n = gc.draw(rng, 4000, "noisy-100")
        diff, s2, d, scale = ks.yuen_parts(np.log(b), np.log(n))
        d0, s0sq, total = ks.family_prior(s2, d)
        p, _ = ks.moderated_p(diff, s2, d, scale, d0, s0sq[:, None], total[:, None])
        self.assertLessEqual((p[:, 0] < 1e-3).sum(), 12)  # nominal 4
        self.assertLessEqual((p[:, 0] < 1e-2).sum(), 60)  # nominal 40


class TestTrimmedParts(unittest.TestCase):
    def test_against_scipy(self):
        import numpy as np
        from scipy.stats import trim_mean
        from scipy.stats.mstats import winsorize
        rng = random.Random(1)
        for n in (5, 8, 10, 11, 20, 23, 40):
            x = [rng.lognormvariate(0, 0.3) for _ in range(n)]
            x[0] = x[1]  # a tie
            tm, wv, h = ks.trimmed_parts(x)
            g = int(0.1 * n)
            self.assertEqual(h, n - 2 * g)
            self.assertAlmostEqual(tm, trim_mean(x, 0.1), places=12)
            w = np.asarray(winsorize(np.asarray(x), limits=(0.1, 0.1)))
            self.assertAlmostEqual(wv, float(np.var(w, ddof=1)), places=12)

    def test_hand_values(self):
        tm, wv, h = ks.trimmed_parts([7, 1, 2, 10, 3, 4, 5, 6, 8, 9])
        # kept 2..9 (mean 5.5); winsorized 2, 2, 3, ..., 9, 9: squares sum to 66.5.
        self.assertEqual((tm, h), (5.5, 8))
        self.assertAlmostEqual(wv, 66.5 / 9)
        tm, wv, h = ks.trimmed_parts([3.0, 1.0, 2.0, 4.0, 5.0])  # five: nothing trimmed
        self.assertEqual((tm, wv, h), (3.0, 2.5, 5))


class TestYuenWelch(unittest.TestCase):
    def test_matches_scipy_trimmed_welch_t(self):
        from scipy.stats import ttest_ind
        rng = random.Random(2)
        for nb, nn, sb, sn in ((10, 10, 1, 1), (10, 5, 1, 2), (20, 10, 2, 1), (6, 12, 1, 3)):
            b = [rng.gauss(0, sb) for _ in range(nb)]
            n = [rng.gauss(0.5, sn) for _ in range(nn)]
            stat = ks.location_stat(b, n)
            p, df = ks.location_p(stat)
            ref = ttest_ind(n, b, equal_var=False, trim=0.1)
            self.assertAlmostEqual(stat["diff"] / math.sqrt(stat["s2"] * stat["scale"]),
                                   ref.statistic, places=10)
            self.assertAlmostEqual(p, ref.pvalue, places=10)

    def test_unequal_counts_and_noise_keep_alpha(self):
        # 10 vs 5 values, the 5 twice as noisy, equal centers: the pooled (Yuen-Dixon) form
        # said p < 0.01 in 3.2 % of such rows.
        rng = random.Random(4)
        trials, hits = 4000, 0
        for _ in range(trials):
            b = [rng.gauss(0, 1) for _ in range(10)]
            n = [rng.gauss(0, 2) for _ in range(5)]
            hits += ks.location_p(ks.location_stat(b, n))[0] < 0.01
        self.assertLess(hits / trials, 0.02)


class TestModeratedNull(unittest.TestCase):
    def test_p_values_are_uniform_under_a_a(self):
        import numpy as np
        from scipy.stats import kstest
        rng = np.random.default_rng(5)
        b = 1 + 0.05 * rng.standard_normal((200, 100, 10))
        n = 1 + 0.05 * rng.standard_normal((200, 100, 10))
        diff, s2, d, scale = ks.yuen_parts(np.log(b), np.log(n))
        d0, s0sq, total = ks.family_prior(s2, d)
        self.assertGreater(np.median(d0), 100)  # alike rows: strongly moderated
        p = ks.moderated_p(diff, s2, d, scale, d0, s0sq[:, None], total[:, None])[0].ravel()
        self.assertLess(kstest(p, "uniform").statistic, 0.015)
        for level, low, high in ((0.1, 0.85, 1.15), (0.01, 0.6, 1.3), (0.001, 0.2, 2.0)):
            self.assertTrue(low <= (p < level).mean() / level <= high, (level, (p < level).mean()))

    def test_a_small_family_of_graded_noise_keeps_alpha(self):
        # Five rows at 3, 4, 5, 6 and 8 % CV: moderated toward the family's typical variance
        # the 8 % row's null p < alpha/5 came 3.5 times as often as it should.
        import gate_calibration as gc
        import numpy as np
        rng = np.random.default_rng(3)
        b, n = gc.draw(rng, 10000, "graded-5")
        diff, s2, d, scale = ks.yuen_parts(np.log(b), np.log(n))
        d0, s0sq, total = ks.family_prior(s2, d)
        p, _ = ks.moderated_p(diff, s2, d, scale, d0, s0sq[:, None], total[:, None])
        self.assertLess((p[:, 4] < 0.002).mean(), 2.2 * 0.002)
        self.assertLess((p < 0.002).any(axis=-1).mean(), 0.0125)


class TestCalibrationScript(unittest.TestCase):
    def test_short_run_agrees_with_compare_sides_and_keeps_alpha(self):
        import gate_calibration as gc
        for name in ("graded-10", "power"):
            differ, worst = gc.check(name, 20, seed=9)
            self.assertEqual(differ, 0, name)
            self.assertLess(worst, 1e-9, name)
        out = gc.run("graded-5", 3000, seed=2)
        self.assertLessEqual(out["false"], 45, out)  # alpha 0.01: 30 expected at most
        out = gc.run("power", 200, seed=2)
        self.assertGreaterEqual(out["caught"], 190, out)
        self.assertLessEqual(out["false"], 6, out)


class TestLikeWithLike(unittest.TestCase):
    def sides(self, new_processes):
        base = [0.92, 0.95, 0.97, 0.99, 1.0, 1.01, 1.03, 1.05, 1.07, 1.1]
        bdoc = {"context": dict(mj.CONTEXT), "benchmarks": []}
        for i, v in enumerate(base):
            e = mj.entry(CODEC, 0, 1, 0, {"cpu_time": 1e5 * v})
            e["kbench_process"] = i
            bdoc["benchmarks"].append(e)
        rng = random.Random(6)
        ndoc = {"context": dict(mj.CONTEXT), "benchmarks": []}
        for i in range(10):
            e = mj.entry(CODEC, 0, 10, i, {"cpu_time": 1.08e5 * (1 + rng.gauss(0, 0.005))})
            if new_processes > 1:
                e["kbench_process"] = i % new_processes
            ndoc["benchmarks"].append(e)
        return ks.Side("base", [bdoc]), ks.Side("new", [ndoc])

    def test_processes_are_never_judged_against_repetitions_of_one_process(self):
        # Ten process medians (5 % apart) against ten repetitions of one process (0.5 %
        # apart): the repetitions' small spread is not the builds' and made a verdict of
        # every difference between processes.
        base, new = self.sides(1)
        result = kc.compare_sides(base, new, metrics=["cpu_time"])
        row = result["rows"][0]
        self.assertEqual(row["verdict"], "inconclusive")
        self.assertEqual((row["samples"], row["n_base"], row["n_new"]), ("process", 10, 1))
        self.assertIn("run more kbench processes", row["reason"])
        self.assertEqual(kc.exit_code(result), 3)

    def test_one_process_a_side_compares_repetitions(self):
        import make_json
        b = make_json.make([(CODEC, {"cpu_time": 1e5})], reps=10, seed=1, noise=0.01)
        n = make_json.make([(CODEC, {"cpu_time": 1e5})], reps=10, seed=2, noise=0.01)
        result = kc.compare_sides(ks.Side("b", [b]), ks.Side("n", [n]), metrics=["cpu_time"])
        self.assertEqual(result["rows"][0]["samples"], "repetition")
        self.assertEqual(result["rows"][0]["n_base"], 10)


if __name__ == "__main__":
    unittest.main()
