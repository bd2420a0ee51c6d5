"""Tests of scripts/profile (on a compiled fake kbench) and of the perf-script
folding and flame graph rendering in scripts/kbench/flame.py."""

import os
import shutil
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

from kbench import flame as kf

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROFILE = os.path.join(ROOT, "scripts", "profile")
FAKE = os.path.join(HERE, "fake_kbench")


PERF_SCRIPT = """\
kbench 1234 [000]   100.000001:     250000 cpu-clock:ppp:
	    55d0 zstd_compress_block+0x1a (/usr/lib/libzstd.so.1)
	    4000 Codec::compress+0x10 (/work/build/kbench)
	    3000 main+0x5 (/work/build/kbench)

kbench 1234 [000]   100.000002:     250000 cpu-clock:ppp:
	    4000 Codec::compress+0x22 (/work/build/kbench)
	    3000 main+0x5 (/work/build/kbench)

rdk:broker-1 1234/1240 [001]   100.000003:     250000 cpu-clock:ppp:
	    9999 [unknown] (/usr/lib/librdkafka.so.1)
	    8888 start_thread+0x1 (/usr/lib/libc.so.6)

"""


CALLGRIND_OUT = """\
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 157

ob=(1) /work/build/kbench
fl=(1) t.c
fn=(1) leaf'a'main
3 100
fl=(2) other.c
fn=(2) a'main
4 5
cfl=(1)
cfn=(1)
calls=1 3
4 100
fn=(3) main
5 2
cfn=(2)
calls=1 4
5 105
cfn=(4) leaf'main
calls=1 3
+1 50
fn=(4)
3 50
totals: 157
"""

OFFCPU_SCRIPT = """\
kbench 100/101   10.000000: sched:sched_switch: prev_comm=kbench prev_pid=101 prev_state=S ==> next_pid=5
\tffffffff81 __schedule ([kernel.kallsyms])
\t     1234 pthread_cond_wait@@GLIBC_2.3.2 (/usr/lib/libc.so.6)
\t     5678 RunWork+0x10 (/work/build/kbench)

kbench 100/101   10.000010: PERF_RECORD_SWITCH OUT
rdk:broker1 100/102   10.001000: sched:sched_switch: prev_comm=rdk:broker1 prev_state=R ==> next_pid=6
\tffffffff81 __schedule ([kernel.kallsyms])
\t     9999 [unknown] (/usr/lib/librdkafka.so.1)

rdk:broker1 100/102   10.001500: PERF_RECORD_SWITCH IN
kbench 100/101   10.002010: PERF_RECORD_SWITCH IN
kbench 100/101   10.003000: PERF_RECORD_SWITCH IN
"""


def perf_works():
    if not shutil.which("perf"):
        return False
    with tempfile.NamedTemporaryFile() as f:
        r = subprocess.run(["perf", "record", "-q", "-g", "-o", f.name, "--", "true"],
                           capture_output=True)
        return r.returncode == 0 and os.path.getsize(f.name) > 0


class TestFlame(unittest.TestCase):
    def test_fold(self):
        stacks = kf.fold_perf_script(PERF_SCRIPT.splitlines(True))
        self.assertEqual(stacks, {
            "kbench;main;Codec::compress;zstd_compress_block": 1,
            "kbench;main;Codec::compress": 1,
            "rdk:broker-1;start_thread;[librdkafka.so.1]": 1,
        })

    def test_svg(self):
        svg = kf.render_svg({"a;b;c": 3, "a;b": 1, "x": 4}, title="t <&>")
        root = ET.fromstring(svg)  # well-formed, title escaped
        texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
        self.assertIn("all (8 samples, 100.00%)", texts)
        self.assertIn("c (3 samples, 37.50%)", texts)

    def test_fold_callgrind(self):
        # Self cost per call chain, exact: the call lines' inclusive costs are not counted.
        stacks = kf.fold_callgrind(CALLGRIND_OUT.splitlines(True))
        self.assertEqual(stacks, {"main;a;leaf": 100, "main;a": 5, "main": 2, "main;leaf": 50})
        self.assertEqual(sum(stacks.values()), 157)  # callgrind's totals: self costs only

    def test_named_fraction(self):
        stacks = {"t;main;ZSTD_compressBlock_doubleFast": 95, "t;main;[libzstd.so.1.5.4]": 3,
                  "t;main;0x000000000001f2d9": 2}
        self.assertAlmostEqual(kf.named_fraction(stacks), 0.95)
        self.assertIn("95.00% in named functions", kf.summary_text(stacks))

    def test_roles(self):
        stacks = {"kbench;main;Produce": 5, "rdk:main;rd_kafka_thread_main": 2,
                  "rdk:broker1;rd_kafka_broker_serve": 3, "rdk:broker-1;poll": 1,
                  "rdk:mock;rd_kafka_mock_cluster_thread_main": 4}
        roles = kf.split_roles(stacks)
        self.assertEqual({r: sum(v.values()) for r, v in roles.items()},
                         {"application": 5, "librdkafka-main": 2, "librdkafka-broker": 4,
                          "librdkafka-mock": 4})

    def test_offcpu(self):
        stacks = kf.fold_offcpu(OFFCPU_SCRIPT.splitlines(True), {})
        self.assertEqual(stacks, {
            "kbench;[sleeping: futex, poll, timer...];RunWork;pthread_cond_wait@@GLIBC_2.3.2;__schedule_[k]": 2010,
            "rdk:broker1;[runnable: preempted, waiting for a CPU];[librdkafka.so.1];__schedule_[k]": 500,
        })
        # Wait sites: the frame outside libc and the kernel that chose to wait, and the call.
        sites = {}
        kf.fold_offcpu(OFFCPU_SCRIPT.splitlines(True), sites)
        self.assertEqual(sites, {"application: RunWork > pthread_cond_wait@@GLIBC_2.3.2": 2010})
        table = kf.offcpu_table(stacks, sites)
        self.assertRegex(table, r"2\.0 ms +80\.08% +application: RunWork > pthread_cond_wait")
        self.assertRegex(table, r"kbench +application +2\.0 +0\.0 +0\.0")

    def test_diff_ranks_planted_first(self):
        a = {"main;compress": 600, "main;checksum": 300, "main;copy": 100}
        b = {"main;compress": 600, "main;checksum": 315, "main;copy": 100}
        rows, ta, tb = kf.diff_profiles(a, b, normalize=False)
        self.assertEqual(rows[0]["function"], "checksum")
        self.assertAlmostEqual(rows[0]["delta_pct_of_function"], 5.0)
        self.assertEqual(rows[1]["delta"], 0)
        # Sampled: shares compared, so a longer run of B is not a change.
        rows, _, _ = kf.diff_profiles(a, {k: 2 * v for k, v in b.items()}, normalize=True)
        self.assertEqual(rows[0]["function"], "checksum")
        svg = kf.render_diff_svg(a, b, "t", normalize=False)
        root = ET.fromstring(svg)
        titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
        self.assertIn("checksum (B 315, A 300, change +5.00%)", titles)
        self.assertIn("rgb(255,55,55)", svg)  # the largest growth in full red


class TestProfileScript(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kbench-profile-test.")
        cls.bin = os.path.join(cls.tmp, "kbench")
        cls.have_bin = shutil.which("cc") is not None and subprocess.run(
            ["cc", "-O1", "-g", "-I", FAKE, os.path.join(FAKE, "fake_kbench.c"), "-o", cls.bin],
            capture_output=True).returncode == 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_profile(self, args, env=None):
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.run([PROFILE] + args, capture_output=True, text=True, env=e,
                              timeout=120, stdin=subprocess.DEVNULL)

    def test_help(self):
        proc = self.run_profile(["--help"])
        self.assertEqual(proc.returncode, 0)
        self.assertIn("usage: scripts/profile", proc.stdout)

    def test_errors(self):
        for args, env, needle in (([], {}, "the following arguments are required: FILTER"),
                                  (["--diff", "A"], {}, "--diff: expected 2 arguments"),
                                  (["--diff", "no-such-rev", "HEAD", "X"], {}, "neither an executable"),
                                  (["--diff", "libs=/nonexistent", "HEAD", "X"], {}, "no directory"),
                                  (["--freq", "x", "X"], {}, "argument --freq: invalid positive integer value"),
                                  (["--callers", "0", "X"], {}, "argument --callers: invalid positive integer value"),
                                  (["--tool", "callgrind", "--off-cpu", "X"], {"KBENCH_BIN": "/bin/true"},
                                   "--off-cpu needs perf"),
                                  (["--tool", "gprof", "X"], {}, "invalid choice: 'gprof'"),
                                  (["--bogus", "X"], {}, "unrecognized arguments: --bogus"),
                                  (["X"], {"KBENCH_BIN": "/nonexistent/kbench"}, "not found")):
            proc = self.run_profile(args, env)
            self.assertEqual(proc.returncode, 2, args)
            self.assertIn(needle, proc.stderr)

    def check_common(self, out, filt):
        with open(os.path.join(out, "command.txt")) as f:
            cmd = f.read()
        self.assertIn("--benchmark_filter=" + filt, cmd)
        self.assertIn(self.bin, cmd)
        self.assertGreater(os.path.getsize(os.path.join(out, "report.txt")), 0)
        self.assertGreater(os.path.getsize(os.path.join(out, "result.json")), 0)

    @unittest.skipUnless(shutil.which("valgrind"), "needs valgrind")
    def test_callgrind(self):
        if not self.have_bin:
            self.skipTest("no C compiler")
        out = os.path.join(self.tmp, "cg")
        proc = self.run_profile(["--tool", "callgrind", "--out-dir", out, "Codec"],
                                {"KBENCH_BIN": self.bin, "KBENCH_FIXED_ITERATIONS": "5"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.check_common(out, "Codec")
        with open(os.path.join(out, "callgrind.out")) as f:
            self.assertIn("totals:", f.read())
        self.assertIn(os.path.join(out, "callgrind.out"), proc.stdout)

    @unittest.skipUnless(shutil.which("valgrind"), "needs valgrind")
    def test_callgrind_diff_names_planted_function_first(self):
        # Side B's fake_checksum does 5 % more work; callgrind's counts are exact, so it
        # must rank first, with +5 % of its own cost, and nothing else may change.
        sides = []
        for name, plant in (("a", "0"), ("b", "5")):
            exe = os.path.join(self.tmp, "planted-" + name)
            r = subprocess.run(["cc", "-O1", "-g", "-DPLANT=" + plant, os.path.join(FAKE, "planted.c"),
                                "-o", exe], capture_output=True, text=True)
            if r.returncode != 0:
                self.skipTest("no C compiler: " + r.stderr)
            sides.append(exe)
        out = os.path.join(self.tmp, "diff")
        proc = self.run_profile(["--tool", "callgrind", "--out-dir", out, "--diff", sides[0], sides[1],
                                 "Fake"], {"KBENCH_FIXED_ITERATIONS": "10"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        import json
        with open(os.path.join(out, "diff", "diff.json")) as f:
            rows = json.load(f)["rows"]
        self.assertEqual(rows[0]["function"], "fake_checksum")
        self.assertAlmostEqual(rows[0]["delta_pct_of_function"], 5.0, delta=0.2)
        self.assertTrue(all(abs(r["delta"]) < 0.001 * abs(rows[0]["delta"]) for r in rows[1:]), rows[:3])
        for f in ("diff.svg", "diff.txt", "command.txt"):
            self.assertTrue(os.path.exists(os.path.join(out, "diff", f)), f)
        for side in ("a", "b"):
            for f in ("stacks.folded", "flamegraph.svg", "summary.txt", "callgrind.out", "context.txt"):
                self.assertTrue(os.path.exists(os.path.join(out, side, f)), (side, f))

    def test_perf_flamegraph(self):
        if not self.have_bin:
            self.skipTest("no C compiler")
        if not perf_works():
            self.skipTest("perf record does not work on this machine")
        out = os.path.join(self.tmp, "perf")
        proc = self.run_profile(["--out-dir", out, "Fake"],
                                {"KBENCH_BIN": self.bin, "KBENCH_FIXED_ITERATIONS": "3000"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.check_common(out, "Fake")
        svg = os.path.join(out, "flamegraph.svg")
        ET.parse(svg)
        with open(os.path.join(out, "stacks.folded")) as f:
            self.assertIn("main", f.read())
        with open(os.path.join(out, "summary.txt")) as f:
            self.assertIn("in named functions", f.read())
        self.assertTrue(os.path.exists(os.path.join(out, "threads", "roles.txt")))


if __name__ == "__main__":
    unittest.main()
