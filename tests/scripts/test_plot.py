"""Tests of scripts/plot: every chart kind is written as a real PNG when its data
exists, and nothing is drawn (or a clear error given) otherwise."""

import contextlib
import io
import os
import subprocess
import tempfile
import unittest

import make_json as mj
from kbench import __main__ as kbench_main

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PLOT = os.path.join(ROOT, "scripts", "plot")


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def in_process(prog, args):
    """scripts/PROG ARGS run in this process (as test_compare runs compare): the charts are
    the same files, without a process each importing matplotlib (and scipy for compare).
    test_bad_input runs the real command: its messages and exit statuses."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            returncode = kbench_main.run(prog, list(args)) or 0
        except SystemExit as e:
            returncode = e.code if isinstance(e.code, int) else 1
    return subprocess.CompletedProcess([prog] + list(args), returncode, stdout.getvalue(),
                                       stderr.getvalue())


class TestPlot(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = self.tmp.name

    def run_plot(self, *args):
        return in_process("plot", args)

    def run_plot_process(self, *args):
        return subprocess.run([PLOT] + list(args), capture_output=True, text=True, timeout=60)

    def assert_pngs(self, proc, expected_prefixes):
        self.assertEqual(proc.returncode, 0, proc.stderr)
        paths = proc.stdout.split()
        for prefix in expected_prefixes:
            hits = [p for p in paths if os.path.basename(p).startswith(prefix)]
            self.assertTrue(hits, "no %s chart in %s" % (prefix, paths))
        for p in paths:
            with open(p, "rb") as f:
                head = f.read(8)
            self.assertEqual(head, PNG_MAGIC, p)
            self.assertGreater(os.path.getsize(p), 5000, p)  # a drawn chart, not a stub
        return paths

    def test_all_charts(self):
        base = os.path.join(self.dir, "base.json")
        new = os.path.join(self.dir, "new.json")
        specs = mj.codec_specs() + mj.produce_specs()
        mj.write(base, mj.make(specs, reps=5, seed=1))
        shifted = [(s[0], s[1], {"cpu_time": 0.2}) if i == 0 else s for i, s in enumerate(specs)]
        mj.write(new, mj.make(shifted, reps=5, seed=2))
        verdict = os.path.join(self.dir, "verdict.json")
        in_process("compare", [base, new, "--out", verdict])
        out = os.path.join(self.dir, "charts")
        proc = self.run_plot(base, "--verdict", verdict, "--out", out)
        paths = self.assert_pngs(proc, ["produce-throughput", "latency", "codecs", "ab-change"])
        self.assertTrue(all(p.startswith(out) for p in paths))

    def test_only_codec_data_draws_only_codec_chart(self):
        res = os.path.join(self.dir, "codec.json")
        mj.write(res, mj.make(mj.codec_specs(), reps=3))
        proc = self.run_plot(res)
        paths = self.assert_pngs(proc, ["codecs"])
        self.assertEqual(len(paths), 1)
        self.assertEqual(os.path.dirname(paths[0]), os.path.join(self.dir, "plots"))

    def test_several_inputs_get_prefixed_names(self):
        a = os.path.join(self.dir, "run-a.json")
        b = os.path.join(self.dir, "run-b.json")
        for p in (a, b):
            mj.write(p, mj.make(mj.produce_specs(), reps=3))
        proc = self.run_plot(a, b, "--out", self.dir)
        paths = self.assert_pngs(proc, ["run-a-produce-throughput", "run-b-latency"])
        self.assertEqual(len(set(paths)), len(paths))

    def test_nothing_to_draw(self):
        res = os.path.join(self.dir, "other.json")
        mj.write(res, mj.make([("Format/encode/version:2/record_bytes:100",
                                {"cpu_time": 10.0, "overhead_bytes_per_record": 7.0})], reps=3))
        proc = self.run_plot(res, "--out", self.dir)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(proc.stdout, "")
        self.assertIn("nothing to draw", proc.stderr)

    def test_bad_input(self):
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write("not json")
        for args in ([bad], ["--verdict", bad], []):
            proc = self.run_plot_process(*args)
            self.assertEqual(proc.returncode, 2, args)
            self.assertIn("plot: error:", proc.stderr)
            self.assertNotIn("Traceback", proc.stderr)


if __name__ == "__main__":
    unittest.main()
