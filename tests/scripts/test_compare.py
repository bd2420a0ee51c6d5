"""Tests of scripts/compare on synthetic Google Benchmark JSON with planted shifts."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COMPARE = os.path.join(ROOT, "scripts", "compare")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))

import make_json as mj  # noqa: E402
import kbench_compare as kc  # noqa: E402

CODEC = mj.CODEC % ("zstd", 3)
PRODUCE = mj.PRODUCE % (8, 2)


def codec_base():
    return {"cpu_time": 200000.0, "bytes_per_second": 327e6, "items_per_second": 3.27e6,
            "ratio": 0.33, "compressed_bytes": 21627.0}


def produce_base():
    return {"real_time": 2e6, "items_per_second": 500e3, "bytes_per_second": 250e6,
            "p50_us": 800.0, "p95_us": 2000.0, "p99_us": 4000.0, "p999_us": 9000.0,
            "max_us": 15000.0, "avg_batch_bytes": 16000.0, "records_per_batch": 32.0,
            "errors": 0.0, "retries": 0.0}


class CompareCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def write(self, name, doc):
        p = self.path(name)
        mj.write(p, doc)
        return p

    def run_compare(self, *args):
        out = self.path("verdict.json")
        proc = subprocess.run([COMPARE] + list(args) + ["--out", out],
                              capture_output=True, text=True, timeout=60)
        verdict = None
        if os.path.exists(out):
            with open(out) as f:
                verdict = json.load(f)
            os.unlink(out)
        return proc, verdict

    def pair(self, specs_base, specs_new, reps=10, base_ctx=None, new_ctx=None, noise=0.01):
        b = self.write("base.json", mj.make(specs_base, reps=reps, seed=11, noise=noise,
                                            context=base_ctx))
        n = self.write("new.json", mj.make(specs_new, reps=reps, seed=22, noise=noise,
                                           context=new_ctx))
        return b, n


def put(path, content):
    with open(path, "wb" if isinstance(content, bytes) else "w") as f:
        f.write(content)


def rows(verdict, key, metric=None):
    return [(r["name"], r["metric"]) for r in verdict[key]
            if metric is None or r["metric"] == metric]


class TestVerdicts(CompareCase):
    def test_ten_percent_slower_is_regression(self):
        b, n = self.pair([(CODEC, codec_base())],
                         [(CODEC, codec_base(), {"cpu_time": 0.10})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(rows(v, "regressions"), [(CODEC, "cpu_time")])
        self.assertIn("REGRESSION", proc.stdout)
        self.assertIn("1 regression,", proc.stdout)
        r = v["regressions"][0]
        self.assertLess(r["p_value"], 0.01)
        self.assertAlmostEqual(r["change_pct"], 10.0, delta=2.0)

    def test_identical_distributions_is_clean(self):
        spec = [(CODEC, codec_base()), (PRODUCE, produce_base())]
        b, n = self.pair(spec, spec)
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(v["regressions"], [])
        self.assertEqual(v["improvements"], [])
        self.assertEqual(v["inconclusive"], [])
        self.assertGreater(len(v["unchanged"]), 10)
        self.assertIn("0 regressions", proc.stdout)

    def test_same_file_is_clean(self):
        b, _ = self.pair([(CODEC, codec_base())], [(CODEC, codec_base())])
        proc, v = self.run_compare(b, b)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(all(r["change_pct"] == 0 for r in v["unchanged"]))

    def test_counter_directions(self):
        base = [(PRODUCE, produce_base()), (CODEC, codec_base())]
        new = [(PRODUCE, produce_base(), {"items_per_second": -0.2, "p99_us": -0.3}),
               (CODEC, codec_base(), {"ratio": 0.15})]
        b, n = self.pair(base, new)
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertCountEqual(rows(v, "regressions"),
                              [(PRODUCE, "items_per_second"), (CODEC, "ratio")])
        self.assertEqual(rows(v, "improvements"), [(PRODUCE, "p99_us")])
        # Real-time benchmark: judged on real_time, cpu_time not reported.
        metrics = {r["metric"] for k in ("unchanged", "regressions", "improvements")
                   for r in v[k] if r["name"] == PRODUCE}
        self.assertIn("real_time", metrics)
        self.assertNotIn("cpu_time", metrics)
        # Informational counters are never judged.
        self.assertNotIn("avg_batch_bytes", metrics)
        self.assertNotIn("records_per_batch", metrics)

    def test_higher_rate_and_lower_latency_are_improvements_exit_0(self):
        b, n = self.pair([(PRODUCE, produce_base())],
                         [(PRODUCE, produce_base(), {"items_per_second": 0.25,
                                                     "p50_us": -0.2})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertCountEqual(rows(v, "improvements"),
                              [(PRODUCE, "items_per_second"), (PRODUCE, "p50_us")])

    def test_significant_but_below_threshold_is_unchanged(self):
        b, n = self.pair([(CODEC, codec_base())],
                         [(CODEC, codec_base(), {"cpu_time": 0.03})], noise=0.002)
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        row = [r for r in v["unchanged"] if r["metric"] == "cpu_time"][0]
        self.assertLess(row["p_value"], 0.01)  # significant ...
        self.assertIn("below threshold", row["reason"])  # ... but small
        # A lower threshold turns the same data into a regression.
        proc, v = self.run_compare(b, n, "--threshold", "2")
        self.assertEqual(proc.returncode, 1)

    def test_big_shift_with_huge_noise_is_not_significant(self):
        b, n = self.pair([(CODEC, codec_base())],
                         [(CODEC, codec_base(), {"cpu_time": 0.10})], noise=0.9, reps=5)
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout)

    def test_too_few_repetitions_is_inconclusive(self):
        for reps in (1, 2, 4):  # 4 vs 4 cannot reach p < 0.01 (min p = 2/70)
            b, n = self.pair([(CODEC, codec_base())],
                             [(CODEC, codec_base(), {"cpu_time": 0.5})], reps=reps)
            proc, v = self.run_compare(b, n)
            self.assertEqual(proc.returncode, 0, "reps=%d %s" % (reps, proc.stdout))
            self.assertEqual(v["regressions"], [])
            self.assertIn((CODEC, "cpu_time"), rows(v, "inconclusive"))
        # ... while 4 vs 4 can reach alpha 0.05.
        proc, v = self.run_compare(b, n, "--alpha", "0.05")
        self.assertEqual(proc.returncode, 1, proc.stdout)

    def test_counter_from_zero_is_regression(self):
        base = produce_base()
        b, n = self.pair([(PRODUCE, base)], [(PRODUCE, dict(base, errors=3.0))])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertEqual(rows(v, "regressions"), [(PRODUCE, "errors")])
        self.assertIsNone(v["regressions"][0]["change_pct"])  # inf is not JSON
        self.assertIn("+inf%", proc.stdout)

    def test_time_units_are_normalised(self):
        b = self.write("base.json", mj.make([(CODEC, {"cpu_time": 200.0})], seed=1,
                                            time_unit="us"))
        n = self.write("new.json", mj.make([(CODEC, {"cpu_time": 200000.0})], seed=2))
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout)

    def test_only_in_one_side_and_filter(self):
        other = mj.CODEC % ("lz4", 1)
        b, n = self.pair([(CODEC, codec_base()), (other, codec_base())],
                         [(CODEC, codec_base()), (PRODUCE, produce_base())])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(v["only_in_base"], [other])
        self.assertEqual(v["only_in_new"], [PRODUCE])
        self.assertIn("only in base: " + other, proc.stdout)
        proc, v = self.run_compare(b, n, "--filter", "zstd")
        self.assertEqual(v["only_in_base"], [])
        self.assertEqual({r["name"] for r in v["unchanged"]}, {CODEC})

    def test_errored_benchmark_is_inconclusive(self):
        b, n = self.pair([(CODEC, codec_base())], [(CODEC, codec_base())], reps=5)
        with open(n) as f:
            doc = json.load(f)
        for e in doc["benchmarks"]:
            if e["run_type"] == "iteration":
                e["error_occurred"] = True
                e["error_message"] = "round trip mismatch"
        mj.write(n, doc)
        proc, v = self.run_compare(b, n, "--alpha", "0.05")
        self.assertEqual(proc.returncode, 0)
        self.assertIn("round trip mismatch", v["inconclusive"][0]["reason"])

    def test_instructions_are_decided_by_threshold(self):
        name = CODEC
        b, n = self.pair([(name, {"instructions": 1e6})],
                         [(name, {"instructions": 1e6}, {"instructions": 0.02})],
                         reps=1, noise=0)
        proc, v = self.run_compare(b, n, "--metric", "instructions", "--threshold", "1")
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertEqual(rows(v, "regressions"), [(name, "instructions")])
        proc, v = self.run_compare(b, n, "--metric", "instructions", "--threshold", "5")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(rows(v, "unchanged"), [(name, "instructions")])


class TestContexts(CompareCase):
    def test_mismatched_context_refused_without_force(self):
        for key, value in (("target", "live"), ("build_type", "Debug"),
                           ("host_name", "other"), ("cpu_model", "Other CPU"),
                           ("num_cpus", 64)):
            b, n = self.pair([(CODEC, codec_base())], [(CODEC, codec_base())],
                             new_ctx={key: value})
            proc, v = self.run_compare(b, n)
            self.assertEqual(proc.returncode, 2, key)
            self.assertIsNone(v)
            self.assertIn("WARNING: context %s differs" % key, proc.stderr)
            self.assertIn("--force", proc.stderr)
            proc, v = self.run_compare(b, n, "--force")
            self.assertEqual(proc.returncode, 0, key)
            self.assertEqual(v["context_diff"][key]["kind"], "critical")

    def test_force_still_reports_regressions(self):
        b, n = self.pair([(CODEC, codec_base())],
                         [(CODEC, codec_base(), {"cpu_time": 0.2})],
                         new_ctx={"target": "live"})
        proc, _ = self.run_compare(b, n, "--force")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("WARNING", proc.stderr)

    def test_version_differences_are_shown_not_refused(self):
        b, n = self.pair([(CODEC, codec_base())], [(CODEC, codec_base())],
                         new_ctx={"librdkafka_version": "2.3.0", "git_sha": "bbbbbbb",
                                  "zstd_version": "1.5.5", "date": "tomorrow"})
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("comparing librdkafka_version 2.0.2 vs 2.3.0", proc.stdout)
        self.assertIn("comparing git_sha aaaaaaaaaaaa vs bbbbbbb", proc.stdout)
        self.assertEqual(v["context_diff"]["zstd_version"]["kind"], "version")
        self.assertNotIn("date", v["context_diff"])


class TestBadInput(CompareCase):
    def good(self):
        return self.write("good.json", mj.make([(CODEC, codec_base())], reps=3))

    def expect_error(self, args, needle):
        proc = subprocess.run([COMPARE] + args, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn(needle, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)

    def test_malformed_json(self):
        p = self.path("bad.json")
        put(p, '{"benchmarks": [')
        self.expect_error([p, self.good()], "not valid JSON")

    def test_empty_file(self):
        p = self.path("empty.json")
        put(p, "")
        self.expect_error([self.good(), p], "is empty")

    def test_not_benchmark_json(self):
        p = self.path("other.json")
        put(p, '{"name": "package.json", "version": "1"}')
        self.expect_error([self.good(), p], "not Google Benchmark JSON")
        put(p, '[1, 2, 3]')
        self.expect_error([self.good(), p], "not Google Benchmark JSON")
        put(p, '{"benchmarks": [{"x": 1}]}')
        self.expect_error([self.good(), p], "has no \"name\"")
        put(p, '{"context": {}, "benchmarks": []}')
        self.expect_error([self.good(), p], "contains no benchmarks")

    def test_binary_file(self):
        p = self.path("bin.json")
        put(p, b"\x7fELF\xff\xfe\x00\x01")
        self.expect_error([self.good(), p], "compare: error:")

    def test_missing_file(self):
        self.expect_error([self.good(), self.path("nope.json")], "cannot read")

    def test_no_common_names(self):
        other = self.write("other.json", mj.make([(PRODUCE, produce_base())], reps=3))
        self.expect_error([self.good(), other], "no benchmark names in common")

    def test_bad_options(self):
        g = self.good()
        self.expect_error([g, g, "--alpha", "0"], "--alpha")
        self.expect_error([g, g, "--alpha", "abc"], "--alpha")
        self.expect_error([g, g, "--threshold", "-1"], "--threshold")
        self.expect_error([g, g, "--filter", "("], "invalid --filter")
        self.expect_error([g], "required")
        self.expect_error([g, g, "--bogus"], "unrecognized")


class TestHelpers(unittest.TestCase):
    def test_min_two_sided_p(self):
        self.assertAlmostEqual(kc.min_two_sided_p(3, 3), 0.1)
        self.assertAlmostEqual(kc.min_two_sided_p(5, 5), 2 / 252)

    def test_table_is_aligned(self):
        r = kc.compare_metric("A/x", "cpu_time", [1.0, 2, 3], [1.0, 2, 3], 0.2, 5)
        r2 = kc.compare_metric("Longer/name/k:v", "p99_us", [5.0] * 5, [9.0] * 5, 0.01, 5)
        lines = kc.format_table([r, r2]).splitlines()
        self.assertEqual(len(lines), 4)
        col = lines[0].index("Metric")
        self.assertTrue(all(l[col - 2:col] == "  " for l in lines))
        self.assertEqual(r2["verdict"], "regression")


if __name__ == "__main__":
    unittest.main()
