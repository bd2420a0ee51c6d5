"""Tests of scripts/profile (on a compiled fake kbench) and of the perf-script
folding and flame graph rendering in scripts/lib/kbench_flame.py."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROFILE = os.path.join(ROOT, "scripts", "profile")
FAKE = os.path.join(HERE, "fake_kbench")
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))

import kbench_flame as kf  # noqa: E402

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

    def test_folded_parse_error(self):
        with self.assertRaises(ValueError):
            kf.read_folded(["a;b notanumber"])


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
        self.assertIn("Usage: scripts/profile", proc.stdout)

    def test_errors(self):
        for args, env, needle in (([], {}, "missing FILTER"),
                                  (["--tool", "gprof", "X"], {}, "--tool must be"),
                                  (["--bogus", "X"], {}, "unknown option"),
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


if __name__ == "__main__":
    unittest.main()
