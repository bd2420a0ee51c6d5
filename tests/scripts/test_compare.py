"""Tests of scripts/compare on synthetic Google Benchmark JSON with planted shifts."""

import contextlib
import io
import json
import math
import os
import subprocess
import tempfile
import unittest
from unittest import mock

import make_json as mj
from kbench import __main__ as kbench_main
from kbench import facts, text
from kbench import results as kr
from kbench import stats as ks
from kbench import verdict as kc
from kbench.commands import compare as compare_tool

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COMPARE = os.path.join(ROOT, "scripts", "compare")


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
        proc = run_in_process(list(args) + ["--out", out])
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


def run_in_process(args):
    """scripts/compare ARGS, run in this process: most tests judge many small files, and a
    process each would spend its time importing scipy. TestBadInput and the Markdown tests
    run the real command."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            returncode = kbench_main.run("compare", args) or 0
        except SystemExit as e:
            returncode = e.code if isinstance(e.code, int) else 1
    return subprocess.CompletedProcess(["compare"] + args, returncode, stdout.getvalue(),
                                       stderr.getvalue())


def beyond(metric, times=2.0):
    """A relative shift of latency `metric` `times` its own threshold's factor (equivalence_pct
    in kbench --describe=json): up for times > 0, down for times < 0."""
    factor = (1.0 + kr.EQUIVALENCE_PCT[metric] / 100.0) * abs(times)
    return factor - 1.0 if times > 0 else 1.0 / factor - 1.0


def put(path, content):
    with open(path, "wb" if isinstance(content, bytes) else "w") as f:
        f.write(content)


def secondary(verdict, verdict_name):
    """(name, metric) of the secondary (reported, not deciding) rows with this verdict."""
    return [(r["name"], r["metric"]) for r in verdict["secondary"]
            if r["verdict"] == verdict_name]


def rows(verdict, key, metric=None):
    return [(r["name"], r["metric"]) for r in verdict[key]
            if metric is None or r["metric"] == metric]


def entries(name, per_rep, process=None):
    """A document with one entry per dict of metrics in per_rep (a repetition each)."""
    out = []
    for i, metrics in enumerate(per_rep):
        e = mj.entry(name, 0, len(per_rep), i, metrics)
        if process is not None:
            e["kbench_process"] = process[i]
        out.append(e)
    return {"context": dict(mj.CONTEXT), "benchmarks": out}


def raw(name, values, metric="cpu_time", process=None):
    """Entries with exactly these values (one repetition each), for tie-exact tests."""
    return entries(name, [{metric: v} for v in values], process)


class TestVerdicts(CompareCase):
    def test_ten_percent_slower_is_regression(self):
        b, n = self.pair([(CODEC, codec_base())],
                         [(CODEC, codec_base(), {"cpu_time": 0.10})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn((CODEC, "cpu_time"), rows(v, "regressions"))
        self.assertIn("REGRESSION", proc.stdout)
        self.assertIn("exit 1 (regression)", proc.stdout)
        r = [r for r in v["regressions"] if r["metric"] == "cpu_time"][0]
        self.assertLess(r["p_value"], 0.01)
        self.assertAlmostEqual(r["change_pct"], 10.0, delta=2.0)
        # The shift comes with its interval, which holds the estimate.
        self.assertLess(r["ci_low_pct"], r["change_pct"])
        self.assertGreater(r["ci_high_pct"], r["change_pct"])
        self.assertAlmostEqual(r["ci_level"], 0.98)
        self.assertRegex(proc.stdout, r"\+\d+\.\d\d% \[\+\d+\.\d%, \+\d+\.\d%\]")

    def test_identical_distributions_is_unchanged_exit_0(self):
        spec = [(CODEC, codec_base()), (PRODUCE, produce_base())]
        b, n = self.pair(spec, spec)
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(v["exit_code"], 0)
        self.assertEqual(v["regressions"] + v["improvements"] + v["inconclusive"], [])
        # One primary row per benchmark; the other metrics are reported, not deciding.
        self.assertEqual(rows(v, "unchanged"), [(CODEC, "cpu_time"), (PRODUCE, "real_time")])
        self.assertGreater(len(secondary(v, "unchanged")), 5)
        for r in v["unchanged"] + v["secondary"]:  # proven small: the interval is inside +-threshold
            self.assertGreater(r["ci_low_pct"], -5.0)
            self.assertLess(r["ci_high_pct"], 5.0)

    def test_same_file_is_unchanged(self):
        b, _ = self.pair([(CODEC, codec_base())], [(CODEC, codec_base())])
        proc, v = self.run_compare(b, b)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(all(r["change_pct"] == 0 for r in v["unchanged"]))

    def test_ties_with_complete_separation_is_regression(self):
        # +25 %, 5 vs 5, every NEW above every BASE, values tied within a side.
        b = self.write("b.json", raw(CODEC, [100.0, 100.0, 101.0, 102.0, 102.0]))
        n = self.write("n.json", raw(CODEC, [125.0, 125.0, 126.0, 127.0, 128.0]))
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout)
        r = v["regressions"][0]
        self.assertLess(r["p_value"], 1e-6)
        self.assertEqual(r["test"], "trimmed t")
        self.assertAlmostEqual(r["change_pct"], 25.0, delta=1.0)

    def test_values_that_do_not_vary_fall_back_to_the_exact_rank_test(self):
        # No spread to scale a t by: the exact rank sum decides, 2/252 at 5 vs 5; in a
        # normal approximation with ties it was 0.0109, above alpha.
        b = self.write("b.json", raw(CODEC, [100.0] * 5))
        n = self.write("n.json", raw(CODEC, [125.0] * 5))
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout)
        r = v["regressions"][0]
        self.assertEqual(r["test"], "rank sum")
        self.assertAlmostEqual(r["p_value"], 2 / 252)

    def test_large_shift_with_overlap_is_inconclusive_exit_3(self):
        # +25 % in 5 of 6 values, the sixth unchanged: the t alone says p = 0.005, but the
        # distribution-free interval reaches 0, so it is no regression; it is not
        # "unchanged" either.
        b = self.write("b.json", raw(CODEC, [100.0, 100.0, 101.0, 102.0, 102.0, 103.0]))
        n = self.write("n.json", raw(CODEC, [100.5, 125.0, 126.0, 127.0, 127.0, 128.0]))
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 3, proc.stdout)
        self.assertEqual(rows(v, "inconclusive"), [(CODEC, "cpu_time")])
        r = v["inconclusive"][0]
        self.assertLess(r["p_value"], 0.01)
        self.assertLessEqual(r["ci_low_pct"], 0.0)
        self.assertIn("interval reaches 0", r["reason"])
        # A shift that is not significant at all says so.
        n2 = self.write("n2.json", raw(CODEC, [101.5, 101.0, 126.0, 127.0, 128.0, 102.0]))
        proc, v = self.run_compare(b, n2)
        self.assertEqual(proc.returncode, 3, proc.stdout)
        self.assertIn("not significant", v["inconclusive"][0]["reason"])
        self.assertIn("exit 3 (not everything could be judged)", proc.stdout)
        proc, v = self.run_compare(b, n, "--accept-inconclusive")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertTrue(v["accept_inconclusive"])

    def test_small_shift_proven_inside_threshold_is_unchanged(self):
        b, n = self.pair([(CODEC, codec_base())],
                         [(CODEC, codec_base(), {"cpu_time": 0.02})], noise=0.002)
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        row = [r for r in v["unchanged"] if r["metric"] == "cpu_time"][0]
        self.assertLess(row["p_value"], 0.01)  # significant ...
        self.assertLess(row["ci_high_pct"], 5.0)  # ... and proven below the threshold
        self.assertIn("interval inside", row["reason"])
        # A lower threshold turns the same data into a regression.
        proc, v = self.run_compare(b, n, "--threshold", "1")
        self.assertEqual(proc.returncode, 1)

    def test_interval_straddling_threshold_is_inconclusive(self):
        # Significant, +4 %, but noisy enough that the interval reaches past 5 %.
        b, n = self.pair([(CODEC, codec_base())],
                         [(CODEC, codec_base(), {"cpu_time": 0.04})], noise=0.03)
        proc, v = self.run_compare(b, n, "--metric", "cpu_time")
        self.assertEqual(proc.returncode, 3, proc.stdout)
        r = v["inconclusive"][0]
        self.assertGreater(r["ci_high_pct"], 5.0)

    def test_big_shift_with_huge_noise_is_inconclusive(self):
        b, n = self.pair([(CODEC, codec_base())],
                         [(CODEC, codec_base(), {"cpu_time": 0.10})], noise=0.9, reps=5)
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 3, proc.stdout)
        self.assertEqual(v["regressions"], [])
        self.assertIn((CODEC, "cpu_time"), rows(v, "inconclusive"))

    def test_fewer_samples_than_can_reach_alpha_is_inconclusive(self):
        for reps in (1, 2, 4):  # 4 vs 4 cannot reach p < 0.01 (min p = 2/70)
            b, n = self.pair([(CODEC, codec_base())],
                             [(CODEC, codec_base(), {"cpu_time": 0.5})], reps=reps)
            proc, v = self.run_compare(b, n)
            self.assertEqual(proc.returncode, 3, "reps=%d %s" % (reps, proc.stdout))
            self.assertEqual(v["regressions"], [])
            r = [r for r in v["inconclusive"] if r["metric"] == "cpu_time"][0]
            self.assertIn("a verdict at p < 0.01 needs >= 5 per side", r["reason"])
        self.assertEqual(v["min_samples"], 5)
        # ... while 4 vs 4 can reach alpha 0.05.
        proc, v = self.run_compare(b, n, "--alpha", "0.05")
        self.assertEqual(proc.returncode, 1, proc.stdout)

    def test_counter_directions(self):
        rate = mj.PRODUCE_RATE % (8, 2)
        base = [(rate, produce_base()), (CODEC, codec_base())]
        new = [(rate, produce_base(), {"items_per_second": -0.2, "p99_us": beyond("p99_us", -2)}),
               (CODEC, codec_base(), {"ratio": 0.15})]
        b, n = self.pair(base, new)
        proc, v = self.run_compare(b, n, "--metric", "items_per_second", "--metric", "ratio",
                                   "--metric", "p99_us")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertCountEqual(rows(v, "regressions"),
                              [(rate, "items_per_second"), (CODEC, "ratio")])
        self.assertEqual(rows(v, "improvements"), [(rate, "p99_us")])
        # Without --metric the same moves are secondary on the codec row: reported with
        # their verdict, deciding nothing.
        proc, v = self.run_compare(b, n)
        self.assertIn((CODEC, "ratio"), secondary(v, "regression"))
        self.assertIn((rate, "items_per_second"), secondary(v, "regression"))
        # Real-time benchmark: judged on real_time, cpu_time not reported.
        metrics = {r["metric"] for r in v["rows"]} if "rows" in v else \
            {r["metric"] for r in v["unchanged"] + v["regressions"] + v["improvements"]
             + v["inconclusive"] + v["secondary"] if r["name"] == rate}
        self.assertIn("real_time", metrics)
        self.assertNotIn("cpu_time", metrics)
        # Informational counters are never judged.
        self.assertNotIn("avg_batch_bytes", metrics)
        self.assertNotIn("records_per_batch", metrics)

    def test_latency_of_unthrottled_rows_is_not_judged(self):
        # On a closed-loop row p*_us measure queueing: a doubled p99 is no regression,
        # and queue_* / wire bytes / queue_full are informational everywhere.
        base = dict(produce_base(), queue_p99_us=100.0, wire_bytes_per_second=1e6,
                    queue_full=10.0)
        b, n = self.pair([(PRODUCE, base)],
                         [(PRODUCE, base, {"p99_us": 1.0, "p50_us": 1.0, "queue_p99_us": 1.0,
                                           "wire_bytes_per_second": -0.5,
                                           "queue_full": 3.0})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        judged = {r["metric"] for r in v["unchanged"]}
        for m in ("p99_us", "p50_us", "queue_p99_us", "wire_bytes_per_second", "queue_full"):
            self.assertNotIn(m, judged)
        # A target_rate counter marks an open-loop row as well as rate:N in the name.
        b, n = self.pair([(PRODUCE, dict(base, target_rate=2e4))],
                         [(PRODUCE, dict(base, target_rate=2e4), {"p99_us": beyond("p99_us")})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertEqual(rows(v, "regressions"), [(PRODUCE, "p99_us")])

    def test_windowed_rows_are_judged_on_throughput_not_time(self):
        # A steady-state window has a fixed length: real_time is that length.
        base = dict(produce_base(), window_seconds=2.0, real_time=2e9)
        b, n = self.pair([(PRODUCE, base)],
                         [(PRODUCE, base, {"items_per_second": -0.2, "real_time": 0.0})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout)
        judged = {r["metric"] for r in v["rows"]} if "rows" in v else \
            {r["metric"] for k in ("regressions", "unchanged") for r in v[k]}
        self.assertNotIn("real_time", judged)
        self.assertIn((PRODUCE, "items_per_second"), rows(v, "regressions"))

    def test_max_rate_rows_are_judged_on_the_rate_found_not_time_or_latency(self):
        # A search's time is its own (more probes, longer) and its latency is at whatever
        # rate it found: only max_rate is judged.
        name = "Produce/max_rate/acks:1/codec:none/record_bytes:500/threads:1/producers:1/real_time"
        base = {"real_time": 2e10, "max_rate": 316e3, "closed_loop_rate": 5e5,
                "rate_probes": 7.0, "max_rate_p99_us": 2e4, "max_rate_mb_per_second": 150.0}
        b, n = self.pair([(name, base)],
                         [(name, base, {"max_rate": -0.15, "real_time": 1.0,
                                        "max_rate_p99_us": 1.0, "rate_probes": 1.0})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertEqual(rows(v, "regressions"), [(name, "max_rate")])
        judged = {r["metric"] for k in ("regressions", "unchanged", "inconclusive",
                                        "improvements") for r in v[k]}
        self.assertEqual(judged, {"max_rate"})

    def test_higher_rate_and_lower_latency_are_improvements_exit_0(self):
        rate = mj.PRODUCE_RATE % (8, 2)
        base = dict(produce_base(), delivered_rate=2e4)
        b, n = self.pair([(rate, base)],
                         [(rate, base, {"delivered_rate": 0.25,
                                        "p99_us": beyond("p99_us", -2)})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        # An open-loop row's primary metrics: the delivered rate and the p99 latency.
        self.assertCountEqual(rows(v, "improvements"),
                              [(rate, "delivered_rate"), (rate, "p99_us")])

    def test_counter_from_zero_is_regression(self):
        base = produce_base()
        for counter in ("errors", "retries", "lost_records"):
            b, n = self.pair([(PRODUCE, dict(base, **{counter: 0.0}))],
                             [(PRODUCE, dict(base, **{counter: 3.0}))])
            proc, v = self.run_compare(b, n, "--metric", counter)
            self.assertEqual(proc.returncode, 1, proc.stdout)
            self.assertEqual(rows(v, "regressions"), [(PRODUCE, counter)])
            self.assertIsNone(v["regressions"][0]["change_pct"])  # inf is not JSON
            self.assertIn("+inf%", proc.stdout)

    def test_time_units_are_normalised(self):
        b = self.write("base.json", mj.make([(CODEC, {"cpu_time": 200.0})], seed=1,
                                            time_unit="us"))
        n = self.write("new.json", mj.make([(CODEC, {"cpu_time": 200000.0})], seed=2))
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout)

    def test_missing_on_one_side_exit_3_unless_filtered_out(self):
        other = mj.CODEC % ("lz4", 1)
        b, n = self.pair([(CODEC, codec_base()), (other, codec_base())],
                         [(CODEC, codec_base()), (PRODUCE, produce_base())])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 3, proc.stdout)
        self.assertEqual(v["only_in_base"], [other])
        self.assertEqual(v["only_in_new"], [PRODUCE])
        self.assertIn("only in base: " + other, proc.stdout)
        # Outside --filter, a missing benchmark is no concern.
        proc, v = self.run_compare(b, n, "--filter", "zstd")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(v["only_in_base"], [])
        self.assertEqual({r["name"] for r in v["unchanged"]}, {CODEC})
        # --accept-inconclusive does not waive a missing benchmark.
        proc, v = self.run_compare(b, n, "--accept-inconclusive")
        self.assertEqual(proc.returncode, 3, proc.stdout)

    def errored(self, path, names=None, reps=None):
        with open(path) as f:
            doc = json.load(f)
        for e in doc["benchmarks"]:
            if e["run_type"] == "iteration" and (names is None or e["name"] in names) \
                    and (reps is None or e["repetition_index"] in reps):
                e["error_occurred"] = True
                e["error_message"] = "round trip mismatch"
        mj.write(path, doc)

    def test_every_new_benchmark_errored_exit_3(self):
        # A NEW run in which everything failed once exited 0 ("0 regressions").
        spec = [(CODEC, codec_base()), (PRODUCE, produce_base())]
        b, n = self.pair(spec, spec)
        self.errored(n)
        for extra in ([], ["--accept-inconclusive"]):
            proc, v = self.run_compare(b, n, *extra)
            self.assertEqual(proc.returncode, 3, proc.stdout)
            self.assertEqual({(e["name"], e["side"]) for e in v["errored"]},
                             {(CODEC, "new"), (PRODUCE, "new")})
            self.assertIn("ERROR on new side: %s: round trip mismatch" % CODEC, proc.stdout)
            self.assertIn("2 errored", proc.stdout)

    def test_one_errored_repetition_is_an_error_and_a_regression_still_wins(self):
        other = mj.CODEC % ("lz4", 1)
        b, n = self.pair([(CODEC, codec_base()), (other, codec_base())],
                         [(CODEC, codec_base(), {"cpu_time": 0.2}), (other, codec_base())])
        self.errored(b, names={other}, reps={3})
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout)  # regression takes precedence
        self.assertEqual([(e["name"], e["side"]) for e in v["errored"]], [(other, "base")])
        proc, v = self.run_compare(b, n, "--filter", "lz4")
        self.assertEqual(proc.returncode, 3, proc.stdout)

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


class TestProcesses(CompareCase):
    """Several kbench processes per side: one sample per process."""

    def paired_files(self, shift, rounds=10, round_noise=0.3, noise=0.01, label="rounds-1"):
        """Base and new of `rounds` interleaved rounds: each round's speed differs by up to
        +-round_noise and hits both sides alike; each process adds its own +-noise."""
        import random
        rng = random.Random(5)
        docs = []
        for side_shift in (0.0, shift):
            d = mj.make([(CODEC, codec_base(), {"cpu_time": side_shift})], reps=1, seed=9,
                        noise=0.0, processes=rounds, process_noise=round_noise)
            for e in d["benchmarks"]:
                e["cpu_time"] *= 1.0 + rng.uniform(-noise, noise)
            d["context"]["kbench_pairing"] = label
            docs.append(d)
        return self.write("pb.json", docs[0]), self.write("pn.json", docs[1])

    def test_paired_rounds_see_a_shift_that_round_to_round_drift_hides(self):
        b, n = self.paired_files(0.08)
        proc, v = self.run_compare(b, n, "--metric", "cpu_time")
        self.assertEqual(proc.returncode, 1, proc.stdout)
        r = v["regressions"][0]
        self.assertEqual((r["samples"], r["n_base"]), ("pair", 10))
        self.assertAlmostEqual(r["change_pct"], 8.0, delta=1.0)
        self.assertIn("10 pairs", proc.stdout)
        self.assertIn("paired:", proc.stdout)
        # The same files unpaired: the rounds' +-30 % drowns the 8 %.
        proc, v = self.run_compare(b, n, "--metric", "cpu_time", "--unpaired")
        self.assertEqual(proc.returncode, 3, proc.stdout)
        self.assertEqual(v["inconclusive"][0]["samples"], "process")

    def test_paired_identical_builds_are_unchanged(self):
        b, n = self.paired_files(0.0)
        proc, v = self.run_compare(b, n, "--metric", "cpu_time")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(v["unchanged"][0]["samples"], "pair")

    def test_pairing_needs_the_same_label_and_enough_rounds(self):
        b, n = self.paired_files(0.08)
        with open(n) as f:
            doc = json.load(f)
        doc["context"]["kbench_pairing"] = "another invocation"
        mj.write(n, doc)
        proc, v = self.run_compare(b, n, "--metric", "cpu_time")
        rows_ = v["inconclusive"] + v["regressions"] + v["unchanged"] + v["improvements"]
        self.assertEqual(rows_[0]["samples"], "process")
        # 5 rounds cannot reach p < 0.01 paired (2/32): compared unpaired instead.
        b, n = self.paired_files(0.08, rounds=5)
        proc, v = self.run_compare(b, n, "--metric", "cpu_time")
        rows_ = v["inconclusive"] + v["regressions"] + v["unchanged"] + v["improvements"]
        self.assertEqual(rows_[0]["samples"], "process")

    def test_drift_between_processes_is_not_taken_for_a_shift(self):
        # Each process drifts by up to +-4 % and its repetitions agree to 0.2 %: the
        # repetitions of one process per side would make a 3 % offset "significant";
        # per-process medians see five values on each side that overlap.
        spec = [(CODEC, codec_base())]
        b = self.write("b.json", mj.make(spec, reps=5, seed=1, noise=0.002, processes=5,
                                         process_noise=0.04))
        n = self.write("n.json", mj.make(spec, reps=5, seed=2, noise=0.002, processes=5,
                                         process_noise=0.04))
        proc, v = self.run_compare(b, n, "--metric", "cpu_time")
        self.assertIn(proc.returncode, (0, 3), proc.stdout)
        r = (v["unchanged"] + v["inconclusive"])[0]
        self.assertEqual((r["samples"], r["n_base"], r["n_new"]), ("process", 5, 5))
        self.assertIsNotNone(r["base_within_cv_pct"])
        self.assertGreater(r["base_cv_pct"], r["base_within_cv_pct"])
        self.assertIn("samples: one per process", proc.stdout)
        self.assertIn("within a process", proc.stdout)
        self.assertIn("5:5p", proc.stdout)

    def test_several_files_per_side_and_result_folders(self):
        spec = [(CODEC, codec_base())]
        slow = [(CODEC, codec_base(), {"cpu_time": 0.15})]
        bases = [self.write("b%d.json" % i, mj.make(spec, reps=2, seed=i)) for i in range(5)]
        news = [self.write("n%d.json" % i, mj.make(slow, reps=2, seed=10 + i))
                for i in range(5)]
        proc, v = self.run_compare("--base", *bases, "--new", *news, "--metric", "cpu_time")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        r = v["regressions"][0]
        self.assertEqual((r["samples"], r["n_base"], r["n_new"]), ("process", 5, 5))
        self.assertEqual(v["processes"], {"base": 5, "new": 5})
        # A scripts/bench result folder stands for its kbench.json.
        for side, files in (("B", bases), ("N", news)):
            os.makedirs(self.path(side))
            kr.merge_files(self.path(side + "/kbench.json"), files)
        proc, v = self.run_compare(self.path("B"), self.path("N"), "--metric", "cpu_time")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(v["regressions"][0]["samples"], "process")
        self.assertEqual(v["regressions"][0]["n_base"], 5)

    def test_merge_keeps_interval_samples_per_process(self):
        from kbench import results as kr
        one = mj.make([(PRODUCE, produce_base())], reps=1, with_aggregates=False)
        one["kbench_intervals"] = {PRODUCE: [{"repetition_index": 0,
                                              "records_per_second": [1.0, 2.0]}]}
        two = json.loads(json.dumps(one))
        two["kbench_intervals"][PRODUCE][0]["records_per_second"] = [3.0, 4.0]
        merged = kr.merge_runs([one, two])
        got = [(r["kbench_process"], r["records_per_second"])
               for r in merged["kbench_intervals"][PRODUCE]]
        self.assertEqual(got, [(0, [1.0, 2.0]), (1, [3.0, 4.0])])
        again = kr.merge_runs([merged, one])  # merging a merged file renumbers after it
        self.assertEqual([r["kbench_process"] for r in again["kbench_intervals"][PRODUCE]],
                         [0, 1, 2])

    def test_merge_keeps_rate_curves_per_process(self):
        from kbench import results as kr
        one = mj.make([(PRODUCE, produce_base())], reps=1, with_aggregates=False)
        one["kbench_rate_curves"] = {PRODUCE: [{"repetition_index": 0,
                                                "target_rate": [1e5, 2e5],
                                                "sustained": [1, 0]}]}
        two = json.loads(json.dumps(one))
        two["kbench_rate_curves"][PRODUCE][0]["target_rate"] = [3e5]
        merged = kr.merge_runs([one, two])
        got = [(r["kbench_process"], r["target_rate"])
               for r in merged["kbench_rate_curves"][PRODUCE]]
        self.assertEqual(got, [(0, [1e5, 2e5]), (1, [3e5])])

    def test_concurrent_processes_combine_by_each_metric_s_described_rule(self):
        rules = {"items_per_second": "sum", "real_time": "max", "p99_us": "histogram",
                 "avg_batch_bytes": "mean"}
        base = dict(produce_base(), avg_batch_bytes=100.0)
        one = mj.make([(PRODUCE, base)], reps=2, noise=0, with_aggregates=False)
        two = mj.make([(PRODUCE, dict(base, items_per_second=100e3, real_time=3e6,
                                      p99_us=9000.0, avg_batch_bytes=300.0))],
                      reps=2, noise=0, with_aggregates=False)
        with mock.patch.object(facts, "merge_rules", return_value=rules):
            merged = kr.merge_runs([one, two], ["one.json", "two.json"], concurrent=True)
        self.assertEqual(merged["context"]["kbench_concurrent_processes"], 2)
        self.assertEqual(len(merged["benchmarks"]), 2)  # one entry per repetition
        row = merged["benchmarks"][0]
        self.assertAlmostEqual(row["items_per_second"], 600e3)
        self.assertEqual((row["real_time"], row["p99_us"], row["avg_batch_bytes"]),
                         (3e6, 9000.0, 200.0))
        short = mj.make([(PRODUCE, base)], reps=1, with_aggregates=False)
        with mock.patch.object(facts, "merge_rules", return_value=rules), \
                self.assertRaisesRegex(kr.BenchmarkJsonError, "different numbers of repetitions"):
            kr.merge_runs([one, short], ["one.json", "short.json"], concurrent=True)

    def test_untimed_rows_are_those_the_description_marks(self):
        self.assertEqual(set(kr.UNTIMED_ROW_COUNTERS),
                         {m for m, row in facts.metrics().items() if row["marks_untimed_row"]})

    def test_one_process_a_side_uses_repetitions_and_says_so(self):
        b, n = self.pair([(CODEC, codec_base())], [(CODEC, codec_base())])
        proc, v = self.run_compare(b, n, "--metric", "cpu_time")
        self.assertEqual(v["unchanged"][0]["samples"], "repetition")
        self.assertIn("repetitions of one process", proc.stdout)

    def test_side_mixing_machines_is_refused(self):
        spec = [(CODEC, codec_base())]
        b1 = self.write("b1.json", mj.make(spec, reps=3, seed=1))
        b2 = self.write("b2.json", mj.make(spec, reps=3, seed=2, context={"cpu_model": "X"}))
        n = self.write("n.json", mj.make(spec, reps=3, seed=3))
        proc = subprocess.run([COMPARE, "--base", b1, b2, "--new", n],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("the base side mixes incomparable contexts (cpu_model)", proc.stderr)


class TestMachineDrift(CompareCase):
    """Two runs that were not interleaved, with (nearly) every row moved the same way: the
    machine's speed changed between them (or every family regressed at once); the gate's
    verdicts stand, but it warns and says how to tell the two apart."""

    NAMES = ["Codec/compress/codec:lz4/level:%d/payload:az/record_bytes:1000/batch_bytes:65536"
             % level for level in range(1, 9)]

    # 8 primary rows under Holm: the smallest p must be < 0.01 / 8, which 7 vs 7 processes
    # (p >= 5.8e-4) and 12 paired rounds (p >= 4.9e-4) can reach, and 5 vs 5 cannot.
    def files(self, shifts, processes=7, label=None):
        docs = []
        for seed, side_shifts in ((1, [0.0] * len(shifts)), (2, shifts)):
            d = mj.make([(n, codec_base(), {"cpu_time": s})
                         for n, s in zip(self.NAMES, side_shifts)],
                        reps=1, seed=seed, noise=0.0, processes=processes, process_noise=0.01)
            if label:
                d["context"]["kbench_pairing"] = label
            docs.append(d)
        return self.write("b.json", docs[0]), self.write("n.json", docs[1])

    def test_every_row_slower_warns_and_keeps_the_verdicts(self):
        b, n = self.files([0.15] * 8)
        proc, v = self.run_compare(b, n, "--metric", "cpu_time")
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertEqual(len(v["regressions"]), 8)
        self.assertIn("8 of 8 benchmarks moved the same way", proc.stderr)
        self.assertIn("scripts/bench-commits", proc.stderr)
        self.assertEqual(v["machine_drift"]["same_way"], 8)
        self.assertEqual(v["machine_drift"]["direction"], "worse")
        self.assertAlmostEqual(v["machine_drift"]["median_pct"], 15.0, delta=2.0)
        md = subprocess.run([COMPARE, b, n, "--metric", "cpu_time", "--format", "markdown"],
                            capture_output=True, text=True, timeout=60)
        self.assertIn("moved the same way", md.stdout)

    def test_a_real_regression_in_one_row_does_not_warn(self):
        b, n = self.files([0.15] + [0.0] * 7)
        proc, v = self.run_compare(b, n, "--metric", "cpu_time")
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertNotIn("moved the same way", proc.stderr)
        self.assertIsNone(v["machine_drift"])

    def test_interleaved_rounds_are_not_suspected(self):
        b, n = self.files([0.15] * 8, processes=12, label="rounds-1")
        proc, v = self.run_compare(b, n, "--metric", "cpu_time")
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertEqual(v["regressions"][0]["samples"], "pair")
        self.assertNotIn("moved the same way", proc.stderr)
        self.assertIsNone(v["machine_drift"])


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
            self.assertIn(proc.returncode, (0, 3), key)
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
        self.expect_error([g], "expected BASE and NEW")
        self.expect_error([], "required")
        self.expect_error([g, g, "--base", g], "not both")
        self.expect_error(["--base", g], "required")
        self.expect_error([g, g, "--bogus"], "unrecognized")
        os.makedirs(self.path("emptydir"))
        self.expect_error([g, self.path("emptydir")], "without kbench.json")


class TestInterface(CompareCase):
    """judge, write and exit_code: what other commands call instead of scripts/compare."""

    def test_judge_write_and_exit_code(self):
        b, n = self.pair([(CODEC, codec_base())], [(CODEC, codec_base(), {"cpu_time": 0.10})])
        with contextlib.redirect_stderr(io.StringIO()):
            verdict = compare_tool.judge([b], [n], metric="cpu_time")
        self.assertEqual(compare_tool.exit_code(verdict), 1)
        self.assertEqual(verdict["exit_code"], 1)
        out, md = self.path("v.json"), self.path("v.md")
        with contextlib.redirect_stdout(io.StringIO()) as console:
            compare_tool.write(verdict, json_path=out, markdown_path=md)
        with open(out) as f:
            self.assertEqual(json.load(f)["regressions"][0]["metric"], "cpu_time")
        with open(md) as f:
            self.assertIn("### kbench: REGRESSION", f.read())
        self.assertIn("exit 1 (regression)", console.getvalue())
        with self.assertRaisesRegex(compare_tool.CompareError, "no benchmark names in common"):
            compare_tool.judge([b], [self.write("other.json", mj.make([(PRODUCE, produce_base())]))])


class TestHelpers(unittest.TestCase):
    def test_min_two_sided_p(self):
        self.assertAlmostEqual(ks.min_two_sided_p(3, 3), 0.1)
        self.assertAlmostEqual(ks.min_two_sided_p(5, 5), 2 / 252)
        self.assertEqual(ks.min_samples(0.01), 5)
        self.assertEqual(ks.min_samples(0.05), 4)

    def test_permutation_p_matches_scipy_with_ties(self):
        import random

        import numpy as np
        from scipy.stats import permutation_test, rankdata
        rng = random.Random(7)
        for _ in range(25):
            n1, n2 = rng.randint(2, 7), rng.randint(2, 7)
            b = [rng.choice([1, 2, 2, 3, 4, 5]) for _ in range(n1)]
            n = [rng.choice([2, 3, 3, 4, 6, 7]) for _ in range(n2)]
            r = rankdata(b + n)
            ref = permutation_test(
                (r[:n1], r[n1:]), lambda x, y, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis),
                vectorized=True, n_resamples=np.inf).pvalue
            self.assertAlmostEqual(ks.permutation_p(b, n), ref, places=9, msg=(b, n))

    def test_u_distribution_and_interval_rank(self):
        self.assertEqual(ks.u_null_counts(3, 3), [1, 1, 2, 3, 3, 3, 3, 2, 1, 1])
        self.assertEqual(sum(ks.u_null_counts(5, 5)), 252)
        # 5 vs 5 at alpha 0.01: P(U <= 1) = 2/252 <= 0.01 < P(U <= 2) = 4/252.
        self.assertEqual(ks.hl_interval_rank(5, 5, 0.01), 2)
        self.assertIsNone(ks.hl_interval_rank(2, 2, 0.01))

    def test_signed_rank_p_is_the_exact_sign_flip_distribution(self):
        import itertools
        import random

        from scipy.stats import rankdata, wilcoxon
        rng = random.Random(3)
        for _ in range(25):
            n = rng.randint(2, 9)
            d = [rng.choice([-3, -1, 0, 1, 1, 2, 4, 5]) for _ in range(n)]
            # Brute force: every sign vector, Pratt's ranks (zeros ranked, signless).
            r = rankdata([abs(x) for x in d])
            t_obs = sum(ri for ri, x in zip(r, d) if x > 0)
            nz = [ri for ri, x in zip(r, d) if x != 0]
            ts = [sum(ri for ri, s in zip(nz, signs) if s)
                  for signs in itertools.product((0, 1), repeat=len(nz))]
            lo = sum(t <= t_obs + 1e-9 for t in ts) / len(ts)
            hi = sum(t >= t_obs - 1e-9 for t in ts) / len(ts)
            ref = 1.0 if all(x == 0 for x in d) else min(1.0, 2 * min(lo, hi))
            self.assertAlmostEqual(ks.signed_rank_p(d), ref, places=9, msg=d)
        # Without ties or zeros it is scipy's exact Wilcoxon test.
        d = [0.3, -0.1, 0.5, 0.7, 0.2, 0.9, -0.4, 1.1]
        self.assertAlmostEqual(ks.signed_rank_p(d), wilcoxon(d, method="exact").pvalue)
        self.assertEqual(ks.min_pairs(0.01), 8)

    def test_walsh_interval_covers_as_stated(self):
        # 10 pairs at alpha 0.05: P(T+ <= k - 1) <= 0.05 < P(T+ <= k), from the 1024 sign
        # vectors of ranks 1..10.
        import itertools
        k = ks.walsh_interval_rank(10, 0.05)
        counts = {}
        for signs in itertools.product((0, 1), repeat=10):
            t = sum(r for r, s in zip(range(1, 11), signs) if s)
            counts[t] = counts.get(t, 0) + 1
        below = sum(c for t, c in counts.items() if t <= k - 1) / 1024
        self.assertLessEqual(below, 0.05)
        self.assertGreater(below + counts[k] / 1024, 0.05)
        self.assertIsNone(ks.walsh_interval_rank(3, 0.01))

    def test_table_is_aligned(self):
        r = kc.compare_metric("A/x", "cpu_time", [1.0, 2, 3], [1.0, 2, 3], 0.2, 5)
        r2 = kc.compare_metric("Longer/name/k:v", "cpu_time", [5.0] * 5, [9.0] * 5, 0.01, 5)
        lines = text.table(compare_tool.HEADER, [compare_tool._cells(dict(x, primary=True))
                                                 for x in (r, r2)]).splitlines()
        self.assertEqual(len(lines), 4)
        col = lines[0].index("Metric")
        self.assertTrue(all(line[col - 2:col] == "  " for line in lines))
        self.assertEqual(r2["verdict"], "regression")


class TestPrimaryMetricsAndExitPaths(CompareCase):
    """One primary metric per row decides; a benchmark without a verdict on it is never
    green; an option that matches nothing is bad input."""

    def test_windowed_row_that_lost_its_throughput_exits_3(self):
        # A NEW run whose windowed rows lost items_per_second once exited 0, judged on
        # nothing (the metric present on one side only was dropped).
        base = dict(produce_base(), window_seconds=2.0, real_time=2e9)
        lost = {k: v for k, v in base.items() if k != "items_per_second"}
        b, n = self.pair([(PRODUCE, base)], [(PRODUCE, lost)])
        for extra in ((), ("--accept-inconclusive",)):
            proc, v = self.run_compare(b, n, *extra)
            self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
            self.assertEqual(v["exit_code"], 3)
            self.assertEqual(v["unjudged"], [{"name": PRODUCE, "metric": "items_per_second",
                                              "reason": "items_per_second missing on the new "
                                                        "side"}])
            self.assertIn("NOT JUDGED: %s: items_per_second missing on the new side" % PRODUCE,
                          proc.stdout)

    def test_open_loop_row_without_delivered_rate_on_one_side_exits_3(self):
        rate = mj.PRODUCE_RATE % (8, 2)
        base = dict(produce_base(), delivered_rate=2e4)
        b, n = self.pair([(rate, base)], [(rate, produce_base())])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertEqual([(u["name"], u["metric"]) for u in v["unjudged"]],
                         [(rate, "delivered_rate")])
        # Its other primary metrics, p50_us and p99_us, were still judged.
        self.assertEqual(rows(v, "unchanged"), [(rate, "p50_us"), (rate, "p99_us")])

    def test_unknown_metric_exits_2(self):
        b, n = self.pair([(CODEC, codec_base())], [(CODEC, codec_base())])
        for metric in ("nosuch", "avg_batch_bytes"):  # absent; informational (no direction)
            proc, v = self.run_compare(b, n, "--metric", metric)
            self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
            self.assertIn("--metric %s matches no judged metric" % metric, proc.stderr)
            self.assertIsNone(v)
        # One good name does not excuse a bad one.
        proc, _ = self.run_compare(b, n, "--metric", "cpu_time", "--metric", "nosuch")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)

    def test_filter_that_matches_nothing_exits_2(self):
        b, n = self.pair([(CODEC, codec_base())], [(CODEC, codec_base())])
        proc, v = self.run_compare(b, n, "--filter", "^NoSuchFamily/")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("matching --filter", proc.stderr)
        self.assertIsNone(v)

    def test_secondary_regression_does_not_decide_unless_named(self):
        b, n = self.pair([(CODEC, codec_base())],
                         [(CODEC, codec_base(), {"ratio": 0.15})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(secondary(v, "regression"), [(CODEC, "ratio")])
        r = [r for r in v["secondary"] if r["metric"] == "ratio"][0]
        self.assertFalse(r["primary"])
        self.assertIsNotNone(r["ci_low_pct"])  # reported with its interval
        self.assertTrue(v["unchanged"][0]["primary"])
        self.assertRegex(proc.stdout, r"ratio +secondary .*REGRESSION")
        self.assertRegex(proc.stdout, r"cpu_time +primary ")
        proc, v = self.run_compare(b, n, "--metric", "ratio")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(rows(v, "regressions"), [(CODEC, "ratio")])


class TestFamilyWise(CompareCase):
    """Holm's adjustment over the primary rows."""

    NAMES = ["Codec/compress/codec:lz4/level:%d/payload:az/record_bytes:1000/batch_bytes:65536"
             % level for level in range(1, 13)]

    def test_significant_alone_but_not_over_the_family_is_not_a_regression(self):
        # 5 vs 5 processes, 4.5 % noise, one row +6.5 %: p = 0.001 alone, but over 12
        # primary rows Holm needs p < 0.01/12 for the first.
        docs = []
        for seed, shift in ((8, 0.0), (108, 0.065)):
            docs.append(mj.make([(nm, codec_base(), {"cpu_time": shift if i == 0 else 0.0})
                                 for i, nm in enumerate(self.NAMES)],
                                reps=1, seed=seed, noise=0.045, processes=5))
        b, n = self.write("b.json", docs[0]), self.write("n.json", docs[1])
        proc, v = self.run_compare(b, n, "--accept-inconclusive")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        row = [r for r in v["inconclusive"] if r["name"] == self.NAMES[0]][0]
        self.assertLess(row["p_value"], 0.01)
        self.assertAlmostEqual(row["p_adjusted"], min(1.0, 12 * row["p_value"]))
        self.assertIn("not over the 12 primary rows", row["reason"])
        self.assertEqual(v["multiplicity"], {"method": "holm",
                                             "family": "primary rows with a p-value",
                                             "size": 12})
        self.assertIn("adj. p", proc.stdout)
        # One row alone is a family of one: the same samples flag it.
        proc, v = self.run_compare(b, n, "--filter", "level:1/")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(v["regressions"][0]["p_adjusted"], v["regressions"][0]["p_value"])

    def test_eight_rounds_are_paired_over_a_family_fewer_are_not(self):
        # The default 8 rounds decide paired over many rows (the exact signed-rank test
        # could not: 2/2^8 = 0.0078 is never below 0.01 / 4 rows); 6 rounds, fewer than a
        # paired verdict needs, are compared unpaired, and compare says so.
        for rounds, samples in ((8, "pair"), (6, "process")):
            docs = []
            for seed, shift in ((1, 0.0), (2, 0.15)):
                d = mj.make([(nm, codec_base(), {"cpu_time": shift}) for nm in self.NAMES[:4]],
                            reps=1, seed=seed, noise=0.005, processes=rounds)
                d["context"]["kbench_pairing"] = "rounds-1"
                docs.append(d)
            b, n = self.write("b.json", docs[0]), self.write("n.json", docs[1])
            proc, v = self.run_compare(b, n)
            self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
            self.assertEqual({r["samples"] for r in v["regressions"]}, {samples})
            self.assertEqual(len(v["regressions"]), 4)
            self.assertEqual({r["test"] for r in v["regressions"]}, {"trimmed t"})
        self.assertIn("not paired: 6 paired rounds are fewer than the 8", proc.stdout)

    def test_moderation_pools_the_family_s_variances(self):
        # Twelve rows, one +6 % at 4 % noise, 6 vs 6 processes: alone, its own ten degrees
        # of freedom cannot carry it past Holm's alpha/12; moderated over the twelve rows'
        # variances it is flagged, and the other rows are not.
        docs = []
        for seed, shift in ((11, 0.0), (111, 0.06)):
            docs.append(mj.make([(nm, codec_base(), {"cpu_time": shift if i == 0 else 0.0})
                                 for i, nm in enumerate(self.NAMES)],
                                reps=1, seed=seed, noise=0.04, processes=6))
        base, new = ks.Side("b", [docs[0]]), ks.Side("n", [docs[1]])
        moderated = kc.compare_sides(base, new)
        row = [r for r in moderated["rows"] if r["primary"] and r["name"] == self.NAMES[0]][0]
        self.assertEqual(row["test"], "moderated trimmed t")
        self.assertGreater(row["df"], 10)
        self.assertEqual(rows(moderated, "regressions"), [(self.NAMES[0], "cpu_time")])
        saved = ks.MIN_MODERATED_ROWS
        ks.MIN_MODERATED_ROWS = 1000  # every row alone
        try:
            alone = kc.compare_sides(base, new)
        finally:
            ks.MIN_MODERATED_ROWS = saved
        row_alone = [r for r in alone["rows"] if r["primary"] and r["name"] == self.NAMES[0]][0]
        self.assertEqual(row_alone["test"], "trimmed t")
        self.assertLessEqual(row_alone["df"], 10)  # Welch: at most 5 + 5 kept values - 2
        self.assertEqual(alone["regressions"], [])
        self.assertGreater(row_alone["p_adjusted"], 0.01)

    def test_synthetic_whole_profile_experiment(self):
        # The experiment of docs/comparing.md, reduced: A/A never flags, +15 % is caught.
        import compare_experiment as ce
        # Seeded, so deterministic; per-row tests without the adjustment flag A/A trials
        # (about 100 x 0.01 false rows each).
        out = ce.run(trials=4, rows=100, samples=10, cv=0.05, shift=0.15, seed=2)
        self.assertEqual(out["aa_exit1"], 0, out)
        self.assertEqual(out["planted_flagged"], 4, out)
        self.assertEqual(out["planted_false_rows"], 0, out)


if __name__ == "__main__":
    unittest.main()


RATE_ROW = mj.PRODUCE_RATE % (1, 1)


def open_loop(**over):
    return dict(dict(produce_base(), target_rate=2e4, delivered_rate=2e4, rate_shortfall=0.0),
                **over)


class TestLatencyVerdicts(CompareCase):
    """An open-loop row is judged on its latency's body and tail; a regression is never
    silent, primary or not."""

    def test_the_body_of_the_latency_moving_decides_even_when_p99_does_not(self):
        # The Nagle shape: p50 thirty times higher, p99 (dominated by stalls) no different.
        b, n = self.pair([(RATE_ROW, open_loop())],
                         [(RATE_ROW, open_loop(), {"p50_us": 29.0})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(rows(v, "regressions"), [(RATE_ROW, "p50_us")])
        self.assertEqual(rows(v, "unchanged", "p99_us"), [(RATE_ROW, "p99_us")])
        self.assertTrue(v["regressions"][0]["primary"])

    def test_a_secondary_regression_is_counted_listed_and_in_markdown(self):
        b, n = self.pair([(CODEC, codec_base())],
                         [(CODEC, codec_base(), {"ratio": 0.5})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(rows(v, "secondary_regressions"), [(CODEC, "ratio")])
        self.assertIsNotNone(v["secondary_regressions"][0]["p_adjusted"])
        self.assertIn("SECONDARY REGRESSION (not deciding): %s ratio +4" % CODEC, proc.stdout)
        self.assertRegex(proc.stdout, r"secondary rows \(not deciding\): 1 regression, "
                                      r"0 improvements of \d+")
        md = subprocess.run([COMPARE, b, n, "--format", "markdown"], capture_output=True,
                            text=True, timeout=60).stdout
        folded = md.split("<details>")[0]
        self.assertRegex(folded, r"\| ratio\s*\| secondary\s*\|.*\*\*REGRESSION\*\*")
        self.assertIn("1 regression", md)

    def test_secondary_rows_are_adjusted_over_their_own_family(self):
        b, n = self.pair([(CODEC, codec_base())], [(CODEC, codec_base())])
        _, v = self.run_compare(b, n)
        self.assertTrue(v["secondary"])
        for r in v["secondary"]:
            self.assertIsNotNone(r["p_adjusted"], r["metric"])
            self.assertGreaterEqual(r["p_adjusted"], r["p_value"])

    def test_latency_of_a_row_that_fell_behind_is_not_judged(self):
        b, n = self.pair([(RATE_ROW, open_loop())],
                         [(RATE_ROW, open_loop(rate_shortfall=1.0))])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertEqual(sorted(u["metric"] for u in v["unjudged"]), ["p50_us", "p99_us"])
        self.assertIn("its latency is queueing", v["unjudged"][0]["reason"])
        self.assertIn("1 of 1 new processes", v["unjudged"][0]["reason"])
        # One process of ten short: latency is judged on the nine that held the load.
        procs = 10

        def side(shift, short_process=None):
            doc = mj.make([(RATE_ROW, open_loop(), {"p50_us": shift})], reps=1, seed=shift + 3,
                          processes=procs, process_noise=0.02)
            for e in doc["benchmarks"]:
                if e.get("kbench_process") == short_process:
                    e["rate_shortfall"], e["p50_us"] = 1.0, 1e6
            return doc
        b = self.write("base.json", side(0.0, short_process=3))
        n = self.write("new.json", side(0.0))
        proc, v = self.run_compare(b, n)
        self.assertEqual(v["unjudged"], [], proc.stdout)
        p50 = [r for k in ("unchanged", "inconclusive") for r in v[k] if r["metric"] == "p50_us"]
        self.assertEqual(len(p50), 1, proc.stdout)
        self.assertEqual(p50[0]["n_base"], 9)
        self.assertIn("windows short of the offered load left out", p50[0]["note"])
        self.assertIn("windows short of the offered load left out", proc.stdout)
        # Falling behind with a lower delivered rate is itself the regression.
        b, n = self.pair([(RATE_ROW, open_loop())],
                         [(RATE_ROW, open_loop(rate_shortfall=1.0), {"delivered_rate": -0.2})])
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(rows(v, "regressions"), [(RATE_ROW, "delivered_rate")])

    def test_short_windows_that_leave_too_few_pairs_fall_back_to_unpaired(self):
        # The Nagle shape in 8 paired rounds, 2 base windows short of their load: 6 pairs
        # cannot reach p < 0.01, but 6 and 8 held windows compared unpaired can.
        def side(shift, short=()):
            doc = mj.make([(RATE_ROW, open_loop(), {"p50_us": shift})], reps=1, seed=7,
                          processes=8, process_noise=0.1)
            for e in doc["benchmarks"]:
                if e.get("kbench_process") in short:
                    e["rate_shortfall"] = 1.0
            doc["context"]["kbench_pairing"] = "rounds-1"
            return doc
        b = self.write("base.json", side(0.0, short=(2, 5)))
        n = self.write("new.json", side(29.0))
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        r = [r for r in v["regressions"] if r["metric"] == "p50_us"][0]
        self.assertEqual((r["samples"], r["n_base"], r["n_new"]), ("process", 6, 8))
        self.assertIn("compared unpaired", r["note"])
        self.assertIn("compared unpaired", proc.stdout)
        # With every window held, the same rounds stay paired.
        b = self.write("base.json", side(0.0))
        proc, v = self.run_compare(b, n)
        r = [r for r in v["regressions"] if r["metric"] == "p50_us"][0]
        self.assertEqual((r["samples"], r["n_base"]), ("pair", 8))


END_TO_END = "EndToEnd/latency/acks:1/codec:none/record_bytes:1000/rate:1000/partitions:2/real_time"


class TestLatencyEquivalence(CompareCase):
    """Latency is judged against a threshold of its own (equivalence_pct in kbench
    --describe=json, a factor either way): the spread of identical rounds keeps its interval
    wider than +-5 %, so an A/A could never read "unchanged"."""

    # Log ratios new/base of 8 identical rounds, as a multiple of the spread: one round well
    # off each way, as a stalled window makes them.
    SHAPE = (-1.0, 1.0, -0.5, 0.5, -0.25, 0.25, 0.0, 0.1)

    def rounds(self, factor=1.0, spread=None, moved=("p50_us", "p99_us")):
        """Base and new of 8 paired rounds of an open-loop row, the new latency `factor`
        times the base's, each round's ratio off by the SHAPE times `spread` (default: a
        quarter of the metric's own factor, in logs)."""
        docs = []
        for side in ("base", "new"):
            out = []
            for i, s in enumerate(self.SHAPE):
                m = {"real_time": 5e9, "target_rate": 1000.0, "delivered_rate": 1000.0,
                     "rate_shortfall": 0.0, "window_seconds": 5.0}
                for metric, value in (("p50_us", 700.0), ("p99_us", 20000.0)):
                    a = spread if spread is not None else math.log1p(
                        kr.EQUIVALENCE_PCT[metric] / 100.0) / 4
                    f = factor if metric in moved else 1.0
                    m[metric] = value * (f * math.exp(s * a) if side == "new" else 1.0)
                e = mj.entry(END_TO_END, 0, 8, i, m)
                e["kbench_process"] = i
                out.append(e)
            docs.append({"context": dict(mj.CONTEXT, kbench_pairing="rounds-1"),
                         "benchmarks": out})
        return self.write("base.json", docs[0]), self.write("new.json", docs[1])

    def latency_rows(self, v):
        return {r["metric"]: r for k in ("regressions", "improvements", "unchanged",
                                         "inconclusive") for r in v[k]
                if r["metric"] in ("p50_us", "p99_us")}

    def test_an_aa_spread_is_unchanged_under_the_latency_threshold_not_under_5_pct(self):
        b, n = self.rounds()
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for metric, r in self.latency_rows(v).items():
            own = kr.EQUIVALENCE_PCT[metric]
            self.assertEqual(r["verdict"], "unchanged", r)
            self.assertEqual((r["samples"], r["threshold_pct"]), ("pair", own))
            self.assertAlmostEqual(r["threshold_down_pct"], 100 * own / (100 + own))
            # The same rounds under one +-5 % for every metric: not shown to be small.
            self.assertTrue(r["ci_low_pct"] < -5 or r["ci_high_pct"] > 5, r)
        self.assertRegex(proc.stdout, r"threshold 5 %; own: .*p50_us")
        without = dict(facts.describe(), metrics=[dict(m, equivalence_pct=0)
                                                  for m in facts.describe()["metrics"]])
        proc = self.compare_described(without, b, n)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("interval straddles +-5 %", proc.stdout)

    def test_a_shift_beyond_the_latency_threshold_is_still_found_both_ways(self):
        # The Nagle shape: every round's latency several times the threshold's factor.
        for factor, key, code in ((3.0, "regressions", 1), (1 / 3.0, "improvements", 0)):
            times = {m: factor * (1 + kr.EQUIVALENCE_PCT[m] / 100.0) if factor > 1
                     else factor / (1 + kr.EQUIVALENCE_PCT[m] / 100.0) for m in ("p50_us",)}
            b, n = self.rounds(times["p50_us"], spread=0.1, moved=("p50_us",))
            proc, v = self.run_compare(b, n)
            self.assertEqual(proc.returncode, code, proc.stdout + proc.stderr)
            self.assertIn((END_TO_END, "p50_us"), rows(v, key))

    def test_a_clear_shift_inside_the_latency_threshold_is_not_unchanged(self):
        # Every round twice the base's p99 (well inside its own 25 x): the gate does not flag
        # it, but it must not call it unchanged either: the table shows a change.
        b, n = self.rounds(2.0, spread=0.05, moved=("p99_us",))
        proc, v = self.run_compare(b, n)
        r = self.latency_rows(v)["p99_us"]
        self.assertEqual(r["verdict"], "inconclusive", r)
        self.assertIn("significant shift of +100", r["reason"])
        self.assertEqual(self.latency_rows(v)["p50_us"]["verdict"], "unchanged")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)

    def compare_described(self, description, b, n, *args):
        """scripts/compare in a process of its own that reads DESCRIPTION as kbench's."""
        path = self.path("describe.json")
        with open(path, "w") as f:
            json.dump(description, f)
        return subprocess.run([COMPARE, b, n, *args], capture_output=True, text=True,
                              timeout=120, env=dict(os.environ, KBENCH_DESCRIBE=path))

    def test_the_threshold_is_the_description_s_not_a_copy(self):
        # An equivalence_pct of 37 for p50_us and none for p99_us: compare takes both from
        # kbench's description.
        d = facts.describe()
        planted = dict(d, metrics=[dict(m, equivalence_pct={"p50_us": 37.0}.get(m["name"], 0))
                                   for m in d["metrics"]])
        b, n = self.rounds(spread=0.0)
        proc = self.compare_described(planted, b, n, "--out", self.path("v.json"))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(self.path("v.json")) as f:
            got = {m: (r["threshold_pct"], round(r["threshold_down_pct"], 3))
                   for m, r in self.latency_rows(json.load(f)).items()}
        self.assertEqual(got, {"p50_us": (37.0, round(3700 / 137, 3)), "p99_us": (5.0, 5.0)})
        # --threshold above a metric's own wins, as a factor too.
        proc = self.compare_described(planted, b, n, "--threshold", "50",
                                      "--out", self.path("v.json"))
        with open(self.path("v.json")) as f:
            got = {m: (r["threshold_pct"], round(r["threshold_down_pct"], 3))
                   for m, r in self.latency_rows(json.load(f)).items()}
        self.assertEqual(got, {"p50_us": (50.0, round(5000 / 150, 3)), "p99_us": (50.0, 50.0)})


class TestValuesThatAreNotValues(CompareCase):
    def run_values(self, new_values):
        base = self.write("base.json", entries(CODEC, [{"cpu_time": 1000.0 + i}
                                                       for i in range(10)]))
        new = self.write("new.json", entries(CODEC, [{"cpu_time": v} for v in new_values]))
        return self.run_compare(base, new)

    def test_infinite_values_are_not_dropped_silently(self):
        proc, v = self.run_values([1000.0 + i for i in range(5)] + [float("inf")] * 5)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertEqual(v["unjudged"][0]["metric"], "cpu_time")
        self.assertIn("0 base, 5 new", v["unjudged"][0]["reason"])

    def test_zero_or_negative_time_is_not_an_improvement(self):
        for bad in (0.0, -1000.0):
            proc, v = self.run_values([bad] * 10)
            self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
            self.assertFalse(v["improvements"])
            self.assertIn("not measurements", v["unjudged"][0]["reason"])

    def test_zero_is_a_value_of_a_count(self):
        base = self.write("base.json", entries(CODEC, [{"cpu_time": 1000.0 + i, "errors": 0.0}
                                                       for i in range(10)]))
        proc, v = self.run_compare(base, base)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)


class TestMetricOption(CompareCase):
    def test_a_benchmark_without_the_metric_is_not_judged(self):
        batch = "Batch/build/format:v2/codec:none/record_bytes:100/batch_bytes:65536"
        b, n = self.pair([(CODEC, codec_base()), (batch, {"cpu_time": 5000.0})],
                         [(CODEC, codec_base()), (batch, {"cpu_time": 5000.0},
                                                  {"cpu_time": 0.5})])
        proc, v = self.run_compare(b, n, "--metric", "ratio")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertEqual([(u["name"], u["metric"]) for u in v["unjudged"]], [(batch, "ratio")])
        self.assertNotIn("every row judged", proc.stdout)


class TestMaxRateGrid(CompareCase):
    NAME = ("Produce/max_rate/acks:1/codec:none/record_bytes:500/threads:1/producers:1/"
            "real_time")

    def test_one_grid_step_down_is_a_regression(self):
        # 301,000 -> 287,000 records/s is one step of the search's grid, -4.65 %: under a
        # 5 % threshold it once read "unchanged".
        def side(rates):
            return entries(self.NAME, [{"real_time": 2e10, "max_rate": r,
                                        "max_rate_step_pct": 100 * (1 - 287.0 / 301.0)}
                                       for r in rates])
        b = self.write("base.json", side([301e3] * 8 + [287e3, 316e3]))
        n = self.write("new.json", side([287e3] * 8 + [274e3, 301e3]))
        proc, v = self.run_compare(b, n)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(rows(v, "regressions"), [(self.NAME, "max_rate")])
        self.assertLess(v["regressions"][0]["threshold_pct"], 4.66)
