"""Every script that writes a result checks its output path before it starts the work: a
folder where a file is expected, a file where a folder is expected, a path under a file, or
a place nothing can be written (/proc, even for root) ends in one "PROG: error: OPTION PATH:
..." line and exit 2 within seconds, before any build, broker, workload or input is touched.
The checks are the shared helpers of tests/lib/cli_lib.sh and scripts/kbench/cli.py."""

import os
import re
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIB = os.path.join(ROOT, "scripts", "lib")

FILE, DIR = "file", "dir"
# script, arguments before the output option (enough that only the output path is wrong;
# nothing here exists, so a script that reads or runs anything first fails otherwise),
# the option, what it expects, the PROG its messages start with.
CASES = [
    ("scripts/bench", ["--mock", "--no-build"], "--out", DIR, "scripts/bench"),
    ("scripts/bench-commits", ["HEAD", "HEAD"], "--out-dir", DIR, "scripts/bench-commits"),
    ("scripts/bench-commits", ["HEAD", "HEAD"], "--build-cache", DIR, "scripts/bench-commits"),
    ("scripts/bisect", ["HEAD~1", "HEAD", "--filter", "^Codec/"], "--out-dir", DIR, "scripts/bisect"),
    ("scripts/bisect", ["HEAD~1", "HEAD", "--filter", "^Codec/"], "--build-cache", DIR, "scripts/bisect"),
    ("scripts/compare", ["no-such-base.json", "no-such-new.json"], "--out", FILE, "scripts/compare"),
    ("scripts/distributed", ["run", "--agents", "1", "--bootstrap", "127.0.0.1:9", "--produce", "acks=1",
                             "--dir", "/nonexistent/trogdor", "--kbench", "/nonexistent/kbench"],
     "--out", FILE, "scripts/distributed"),
    ("scripts/history", ["report"], "--out", DIR, "scripts/history"),
    ("scripts/history", ["changes"], "--json", FILE, "scripts/history"),
    ("scripts/history", ["add", "no-such-run"], "--db", FILE, "scripts/history"),
    ("scripts/plot", ["no-such.json"], "--out", DIR, "scripts/plot"),
    ("scripts/profile", ["X"], "--out-dir", DIR, "scripts/profile"),
    ("scripts/scenario", ["producer-sharing"], "--out", DIR, "scripts/scenario producer-sharing"),
    ("scripts/scenario", ["perf-test", "--num-records", "10"], "--out", DIR, "scripts/scenario perf-test"),
    ("scripts/kafka", ["start"], "--dir", DIR, "scripts/kafka"),
    ("scripts/trogdor", ["start"], "--dir", DIR, "scripts/trogdor"),
    ("tests/detector/run_detector_experiment.sh", [], "--work", DIR, "run_detector_experiment"),
]
# Options that go before the other arguments (before history's sub-command, before
# profile's FILTER: what follows it is kbench's).
OPTION_FIRST = {("scripts/history", "--db"), ("scripts/profile", "--out-dir")}
SECONDS = 15


class OutputPaths(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kbench-out-")
        cls.a_file = os.path.join(cls.tmp, "a-file")
        with open(cls.a_file, "w") as f:
            f.write("keep me\n")
        cls.a_dir = os.path.join(cls.tmp, "a-dir")
        os.mkdir(cls.a_dir)

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["rm", "-rf", cls.tmp], check=False)

    def bad_paths(self, expects):
        wrong_kind = self.a_dir if expects == FILE else self.a_file
        return [(wrong_kind, "is a folder" if expects == FILE else "is a file"),
                (os.path.join(self.a_file, "sub", "x.json"), "is a file, not a folder"),
                ("/proc/kbench-no-such/x.json", "cannot write in /proc")]

    def run_script(self, script, args):
        env = dict(os.environ, KBENCH_BIN="/nonexistent/kbench",
                   KBENCH_HISTORY_DB=os.path.join(self.tmp, "no-such", "h.sqlite"))
        env.pop("KBENCH_DRY_RUN", None)
        t0 = time.monotonic()
        proc = subprocess.run([os.path.join(ROOT, script)] + args, capture_output=True, text=True,
                              timeout=120, env=env, stdin=subprocess.DEVNULL, cwd=self.tmp)
        return proc, time.monotonic() - t0

    def test_bad_output_paths_are_refused_first(self):
        for script, before, option, expects, prog in CASES:
            for path, why in self.bad_paths(expects):
                if (script, option) in OPTION_FIRST:
                    args = [option, path] + before
                else:
                    args = before + [option, path]
                with self.subTest(script=script, option=option, path=path):
                    proc, took = self.run_script(script, args)
                    self.assertEqual(proc.returncode, 2, "%s %s: exit %d: %s"
                                     % (script, args, proc.returncode, proc.stderr))
                    self.assertRegex(proc.stderr, r"(?m)^%s: error: %s %s: .*%s" % tuple(
                        map(re.escape, (prog, option, path, why))))
                    self.assertLess(took, SECONDS)
        # Nothing was made beside the file that was in the way, and the file is untouched.
        self.assertEqual(sorted(os.listdir(self.tmp)), ["a-dir", "a-file"])
        self.assertEqual(os.listdir(self.a_dir), [])
        with open(self.a_file) as f:
            self.assertEqual(f.read(), "keep me\n")


class Helpers(unittest.TestCase):
    """The shared checks accept what can be written and create nothing while checking."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kbench-out-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.tmp], check=False)

    def bash(self, call):
        return subprocess.run(["bash", "-c", 'PROG=t; source "$1"; %s' % call, "t",
                               os.path.join(ROOT, "tests", "lib", "cli_lib.sh")],
                              capture_output=True, text=True, timeout=30)

    def python(self, call):
        return subprocess.run([os.path.join(LIB, "python"), "-c", "from kbench import cli; %s" % call],
                              capture_output=True, text=True, timeout=30)

    def test_good_paths_pass_and_nothing_is_made(self):
        new = os.path.join(self.tmp, "new", "deeper")
        existing = os.path.join(self.tmp, "existing.json")
        with open(existing, "w") as f:
            f.write("old\n")
        for proc in (self.bash('check_out_dir --out "%s"' % new),
                     self.bash('check_out_dir --out "%s"' % self.tmp),
                     self.python("cli.check_out_dir(%r)" % new),
                     self.python("cli.check_out_file(%r)" % (new + "/x.json")),
                     self.python("cli.check_out_file(%r)" % existing),
                     self.python("cli.check_out_file('relative.json')")):
            self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.listdir(self.tmp), ["existing.json"])
        with open(existing) as f:
            self.assertEqual(f.read(), "old\n")


if __name__ == "__main__":
    unittest.main()
