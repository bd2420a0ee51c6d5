"""scripts/kbench/scenario_runner.py, the part every scenario's runner shares: the common
options and their refusals, every scenario's parser, failed kbench runs recorded and named,
and the report's note on them. (The clusters it starts and stops are covered live by
tests/scenarios/scenario_test.sh.)"""

import contextlib
import io
import os
import shutil
import signal
import stat
import tempfile
import unittest

from kbench import cli
from kbench.commands import scenario
from kbench.scenario_runner import BOOTSTRAP, Scenario, add_common_arguments, first_error


class RunnerCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kbench-scn-runner.")
        self.env = dict(os.environ)
        self.handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        self.prog = cli.prog
        os.environ.pop("KBENCH_DRY_RUN", None)
        os.environ["KBENCH_BIN"] = self.script("kbench", "exit 0\n")

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.env)
        for s, h in self.handlers.items():
            signal.signal(s, h)
        cli.prog = self.prog
        shutil.rmtree(self.tmp, ignore_errors=True)

    def script(self, name, body):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def args(self, argv):
        parser = cli.ArgumentParser(prog="demo")
        add_common_arguments(parser)
        parser.set_defaults(scenario="demo")
        return parser.parse_args(argv)

    def scenario(self, argv=()):
        return Scenario(self.args(argv), os.path.join(self.tmp, "run.py"))

    def refused(self, argv, message):
        err = io.StringIO()
        with self.assertRaises(SystemExit) as e, contextlib.redirect_stderr(err):
            with self.scenario(argv):
                pass
        self.assertEqual(e.exception.code, 2, err.getvalue())
        self.assertIn("demo: error: " + message, err.getvalue())


class Parse(RunnerCase):
    def test_common_options_in_both_spellings(self):
        out = os.path.join(self.tmp, "out")
        with self.scenario(["--scale=full", "--out", out, "--bootstrap", "h1:1,h2:2", "--tiny"]) as scn:
            self.assertEqual((scn.scale, scn.out, scn.bootstrap, scn.tiny, scn.tiny_arg),
                             ("full", out, "h1:1,h2:2", True, ["--tiny"]))
        self.assertTrue(os.path.isdir(os.path.join(out, "logs")))
        with open(os.path.join(out, "commands.txt")) as f:
            self.assertEqual(f.read(), "scenario demo, scale full (tiny), out %s\n" % out)

    def test_refusals(self):
        self.refused(["--scale", "huge"], "argument --scale: invalid choice: 'huge'")
        self.refused(["--scale"], "argument --scale: expected one argument")
        self.refused(["--bootstrap", "nohost"], "argument --bootstrap: must be HOST:PORT")
        self.refused(["--frobnicate"], "unrecognized arguments: --frobnicate")
        self.refused(["--out", "/proc/kbench-no"], "--out /proc/kbench-no")
        os.environ["KBENCH_BIN"] = os.path.join(self.tmp, "missing")
        self.refused([], "KBENCH_BIN=%s is not executable" % os.environ["KBENCH_BIN"])

    def test_bootstrap_lists(self):
        for good in ("h:1", "10.0.0.1:9092,10.0.0.2:9093"):
            self.assertTrue(BOOTSTRAP.fullmatch(good), good)
        for bad in ("h", "h:", ":1", "h:1,", "h 1:2", "h:1:2"):
            self.assertFalse(BOOTSTRAP.fullmatch(bad), bad)

    def test_a_dry_run_ends_on_entering_and_makes_nothing(self):
        os.environ["KBENCH_DRY_RUN"] = "1"
        out = os.path.join(self.tmp, "dry")
        with self.assertRaises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()):
            with self.scenario(["--out", out]):
                self.fail("a dry run entered the scenario")
        self.assertEqual(e.exception.code, 0)
        self.assertFalse(os.path.exists(out), "a dry run made the output folder")

    def test_every_scenario_has_its_parser(self):
        parser = scenario.parser()
        for name, _, _ in scenario.registry():
            with self.subTest(scenario=name):
                args = parser.parse_args([name, "--tiny"])
                self.assertEqual((args.scenario, args.scale, args.tiny), (name, "small", True))


class FailedRuns(RunnerCase):
    def test_a_failed_run_is_named_its_json_removed_and_the_report_told(self):
        os.environ["KBENCH_BIN"] = self.script(
            "kbench", 'for a; do case $a in --benchmark_out=*) echo "{}" >"${a#*=}";; esac; done\n'
                      'echo "kbench: error: broker gone"; exit 1\n')
        with open(os.path.join(self.tmp, "report.py"), "w") as f:
            f.write("import sys\nopen(sys.argv[1] + '/report.args', 'w').write('\\n'.join(sys.argv[2:]))\n")
        scn = self.scenario(["--out", os.path.join(self.tmp, "o")]).__enter__()
        os.makedirs(scn.out + "/raw")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            scn.try_kbench("p-round1", "p/round1", "p, round 1", ["--x"])
            scn.notes.append("first note")
            with self.assertRaises(SystemExit) as e:
                scn.finish(4, "protocol runs", "missing", "--protocols", "p")
        self.assertEqual(e.exception.code, 1)
        self.assertIn("demo: p, round 1 failed: error: broker gone", err.getvalue())
        self.assertIn("demo: error: 1 of 4 protocol runs failed: p/round1", err.getvalue())
        self.assertFalse(os.path.exists(scn.out + "/raw/p-round1.json"))
        with open(scn.out + "/report.args") as f:
            args = f.read().split("\n")
        self.assertEqual(args[:3] + args[4:], ["--scale", "small", "--wall-seconds", "--note", "first note",
                                               "--note", "**1 of 4 protocol runs failed** and are missing: "
                                               "p/round1 (their logs are in logs/).", "--protocols", "p"])
        with open(scn.out + "/commands.txt") as f:
            self.assertIn("--x --benchmark_out=%s/raw/p-round1.json --benchmark_out_format=json" % scn.out, f.read())

    def test_first_error_reads_the_logs_in_order(self):
        a, b = os.path.join(self.tmp, "a.log"), os.path.join(self.tmp, "b.log")
        with open(a, "w") as f:
            f.write("fine\n")
        with open(b, "w") as f:
            f.write("x ERROR OCCURRED: 'lost 3'\nerror: later\n")
        self.assertEqual(first_error([os.path.join(self.tmp, "none.log"), a, b]), "ERROR OCCURRED: 'lost 3'")
        self.assertEqual(first_error([a]), "")


if __name__ == "__main__":
    unittest.main()
