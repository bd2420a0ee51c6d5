"""Build kbench and pass every test: scripts/setup (run by scripts/test first), lint, the
Release build and every ctest test two at a time (never two Kafka tests at once); beside
ctest, niced: the ASan + UBSan build and its unit tests, a bounded fuzz run, clang-tidy.

environment: KBENCH_FUZZ_SECONDS (default 60), KBENCH_TEST_JOBS (ctest -j, default 2; Kafka
tests never run two at once), CI=true (set by .ci/run): a skipped test fails the run. A test
that cannot run here (not root, a tool missing) is reported by name as skipped.

exit status: 0 every step passed, 1 a step failed (or, under CI=true, a test skipped),
2 bad usage.
"""

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

import kbench
from kbench import cli, ctest_skips
from kbench.commands import lint


def add_arguments(parser):
    parser.add_argument("--quick", action="store_true",
                        help="the edit loop: lint, the Release build, its unit and smoke tests")
    parser.add_argument("--no-sanitize", dest="sanitize", action="store_false", help="skip the ASan/UBSan build")
    parser.add_argument("--no-fuzz", dest="fuzz", action="store_false", help="skip the bounded fuzz run")
    parser.add_argument("--no-live", dest="live", action="store_false",
                        help="skip tests that start a real Kafka broker (label 'live')")
    parser.add_argument("-R", dest="regex", metavar="REGEX", help="only ctest tests matching REGEX")


class Steps:
    """The run's steps, each announced with the seconds since the start; what failed or was skipped."""

    def __init__(self, logs):
        self.started = time.monotonic()
        self.logs = logs
        self.failed, self.skipped = [], []

    def step(self, what, out=sys.stderr):
        print("\n==> [%d s] %s" % (time.monotonic() - self.started, what), file=out, flush=True)

    def run(self, name, cmd, **kw):
        """CMD as step NAME: its success; a failure is remembered."""
        ok = subprocess.run(cmd, **kw).returncode == 0
        if not ok:
            self.failed.append(name)
        return ok

    def ctest(self, name, args, env=None, stdout=None):
        """One ctest run; a skipped test (ctest counts it as passed) is remembered, from the JUnit report."""
        junit = os.path.join(self.logs, name + ".xml")
        ok = self.run(name, ["ctest", "--output-junit", junit] + args, env=env, stdout=stdout, stderr=stdout)
        with contextlib.suppress(OSError, ET.ParseError):
            for test, reason, cases in ctest_skips.skipped_tests(junit):
                self.skipped.append("\n    ".join(["%s: %s: %s" % (name, test, reason)] + cases))
        return ok


def beside_ctest(args, steps, log):
    """The CPU work beside ctest, one step at a time, niced: the ASan/UBSan build and unit tests,
    the fuzz run, clang-tidy last (what is left of it when ctest ends takes both cores)."""
    os.nice(15)  # this thread and what it starts (a thread's nice value is its own on Linux)
    out = dict(stdout=log, stderr=log)
    if args.sanitize:
        steps.step("ASan + UBSan build (build-asan/)", log)
        built = steps.run("ASan/UBSan build", ["cmake", "-S", ".", "-B", "build-asan", "-G", "Ninja",
                                               "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DKBENCH_SANITIZE=ON"], **out) \
            and steps.run("ASan/UBSan build", ["cmake", "--build", "build-asan", "--target", "unit_tests", "-j", "2"],
                          **out)
        if built:
            steps.step("ctest (ASan/UBSan build): unit tests", log)
            env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
                       UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
            steps.ctest("ctest (ASan/UBSan)", ["--test-dir", "build-asan", "--output-on-failure", "-j", "2",
                                               "-L", "unit"] + (["-R", args.regex] if args.regex else []),
                        env=env, stdout=log)
    if args.fuzz and os.access("fuzz/run", os.X_OK):
        seconds = os.environ.get("KBENCH_FUZZ_SECONDS", "60")
        steps.step("fuzz the record readers for %s s" % seconds, log)
        steps.run("fuzz", ["fuzz/run", seconds], **out)
    if not args.quick:
        steps.step("lint: clang-tidy on kbench's sources", log)
        os.environ.setdefault("KBENCH_TIDY_JOBS", "2")
        try:
            tidy = lint.check(["tidy"], log=log)
        except SystemExit:  # a linter missing, said on stderr
            tidy = 1
        if tidy != 0:
            steps.failed.append("clang-tidy")
    steps.step("beside ctest: done", log)


def main(args):
    if args.quick:
        args.sanitize = args.fuzz = args.live = False
    cli.dry_run_exit()
    os.chdir(kbench.ROOT)
    with tempfile.TemporaryDirectory(prefix="kbench-test.") as logs:
        steps = Steps(logs)  # scripts/test ran scripts/setup before this
        steps.step("lint: shellcheck, ruff and clang-format")
        if lint.check(["shell", "python", "format"]) != 0:
            steps.failed.append("lint")
        steps.step("Release build (build/)")
        for cmd in (["cmake", "-S", ".", "-B", "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                     "-DKBENCH_WERROR=ON"], ["cmake", "--build", "build"]):
            if subprocess.run(cmd, stdout=subprocess.DEVNULL if "-S" in cmd else None).returncode != 0:
                cli.die("the Release build failed", status=1)

        beside = None
        with open(os.path.join(logs, "beside.log"), "w") as log:
            if not args.quick or args.sanitize or args.fuzz:
                beside = threading.Thread(target=beside_ctest, args=(args, steps, log))
                beside.start()
            ctest_args = ["--test-dir", "build", "--output-on-failure", "-j", os.environ.get("KBENCH_TEST_JOBS", "2")]
            ctest_args += ["-R", args.regex] if args.regex else []
            ctest_args += ["-L", "unit|smoke"] if args.quick else [] if args.live else ["-LE", "live"]
            steps.step("ctest (Release)")
            steps.ctest("ctest (Release)", ctest_args)
            steps.step("ctest (Release): done")
            if beside:
                beside.join()
        if beside:
            with open(os.path.join(logs, "beside.log")) as log:
                sys.stderr.write(log.read())

    elapsed = time.monotonic() - steps.started
    if steps.skipped:
        cli.info("%d test(s) skipped:\n  %s" % (len(steps.skipped), "\n  ".join(steps.skipped)))
        if os.environ.get("CI") == "true":
            steps.failed.append("skipped tests (CI=true: every test must run)")
    if steps.failed:
        cli.info("FAILED: %s (%d s)" % ("; ".join(dict.fromkeys(steps.failed)), elapsed))
        return 1
    cli.info("all steps passed (%d s)" % elapsed)
    return 0
