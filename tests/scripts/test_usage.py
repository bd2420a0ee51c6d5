"""Every script's bad-usage path: one line "PROG: error: ..." on stderr and exit 2, before
anything runs; and every script takes its messages from the shared libraries
(tests/lib/cli_lib.sh, scripts/kbench/cli.py) instead of defining its own."""

import os
import re
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# script (from the root) -> (bad arguments, the PROG its messages start with). Bad usage is
# checked first in each script, so none of these builds, installs or starts anything.
BAD_USAGE = {
    "scripts/bench": (["--no-such-option"], "scripts/bench"),
    "scripts/bench-commits": (["--runs"], "scripts/bench-commits"),
    "scripts/bisect": (["HEAD~1", "HEAD"], "scripts/bisect"),
    "scripts/history": (["changes", "--alpha"], "scripts/history"),
    "scripts/compare": (["--alpha", "2", "a.json", "b.json"], "scripts/compare"),
    "scripts/distributed": (["run", "--agents"], "scripts/distributed"),
    "scripts/kafka": (["start", "--brokers"], "scripts/kafka"),
    "scripts/librdkafka": (["frobnicate"], "scripts/librdkafka"),
    "scripts/lint": (["--no-such-option"], "scripts/lint"),
    "scripts/plot": ([], "scripts/plot"),
    "scripts/profile": (["--tool"], "scripts/profile"),
    "scripts/scenario": (["no-such-scenario"], "scripts/scenario"),
    "scripts/setup": (["--no-such-option"], "scripts/setup"),
    "scripts/release-history": (["run", "--rounds", "0"], "scripts/release-history"),
    "scripts/symbols": (["build", "no-such-library"], "scripts/symbols"),
    "scripts/test": (["--no-such-option"], "scripts/test"),
    "scripts/trogdor": (["start", "--agents"], "scripts/trogdor"),
    "kbench.ctest_skips": ([], "kbench.ctest_skips"),
    "kbench.summary": ([], "kbench.summary"),
    "tests/golden/generate": (["--no-such-option"], "generate"),
    "tests/detector/run_detector_experiment.sh": (["--runs", "0"], "run_detector_experiment"),
    "tests/detector/plant_slowdown.py": (["no-such-kind"], "plant_slowdown.py"),
    "tests/profile/plant_lz4.sh": ([], "plant_lz4"),
    "tests/scripts/make_json.py": ([], "make_json.py"),
}
# Scenarios: scripts/scenario NAME, each with the same bad option.
SCENARIO_DIR = os.path.join(ROOT, "scripts", "scenarios")

# Executables that are not commands with options of their own.
NOT_COMMANDS = {
    "scripts/lib/python",  # runs the venv's python3 with whatever it is given
    "scripts/trogdor-worker",  # a Trogdor agent's command: JSON on stdin and stdout
}


def shebang(path):
    with open(path, "rb") as f:
        return f.readline().decode("utf-8", "replace")


def executables():
    """Every executable file with a shebang under scripts/, fixtures/ and tests/."""
    found = set()
    for top in ("scripts", "fixtures", "tests"):
        for d, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [x for x in dirs if x not in ("target", "__pycache__", "data")]
            for f in files:
                p = os.path.join(d, f)
                if os.access(p, os.X_OK) and shebang(p).startswith("#!"):
                    found.add(os.path.relpath(p, ROOT))
    return found


def scenario_names():
    """The scenarios: folders of scripts/scenarios/ with a runner, run.py."""
    return sorted(n for n in os.listdir(SCENARIO_DIR)
                  if os.path.isfile(os.path.join(SCENARIO_DIR, n, "run.py")))


def run(script, args, env=None):
    env = dict(os.environ, KBENCH_BIN="/nonexistent/kbench", **(env or {}))
    # Python runs in kbench's one interpreter; a module of the package kbench with a command
    # line as `python -m kbench.NAME`.
    python = os.path.join(ROOT, "scripts", "lib", "python")
    if script.startswith("kbench."):
        cmd = [python, "-m", script]
    elif script.endswith(".py"):
        cmd = [python, os.path.join(ROOT, script)]
    else:
        cmd = [os.path.join(ROOT, script)]
    return subprocess.run(cmd + args, capture_output=True, text=True,
                          timeout=60, env=env, stdin=subprocess.DEVNULL, cwd=ROOT)


class BadUsage(unittest.TestCase):
    def check(self, script, args, prog, env=None):
        proc = run(script, args, env)
        self.assertEqual(proc.returncode, 2, "%s %s: exit %d, stderr: %s"
                         % (script, args, proc.returncode, proc.stderr))
        self.assertRegex(proc.stderr, r"(?m)^%s( [\w-]+)?: error: \S" % re.escape(prog),
                         "%s %s: no '%s: error:' line" % (script, args, prog))

    def test_every_script(self):
        for script, (args, prog) in sorted(BAD_USAGE.items()):
            with self.subTest(script=script):
                self.check(script, args, prog)

    def test_every_scenario(self):
        # Through scripts/scenario, as a dry run: the scenario's runner reads its options
        # before anything (the kbench binary here does not exist).
        names = scenario_names()
        self.assertGreaterEqual(len(names), 4)
        for name in names:
            with self.subTest(scenario=name):
                self.check("scripts/scenario", [name, "--no-such-option"], "scripts/scenario",
                           {"KBENCH_DRY_RUN": "1"})

    def test_missing_value_is_usage_too(self):
        # An option at the end of the line, without its value.
        for script, args, prog in (("scripts/bench", ["--profile"], "scripts/bench"),
                                   ("scripts/test", ["-R"], "scripts/test"),
                                   ("scripts/kafka", ["stop", "--dir"], "scripts/kafka")):
            with self.subTest(script=script):
                self.check(script, args, prog)

    def test_every_command_is_covered(self):
        # A new script gets a bad-usage case here, or this fails.
        covered = set(BAD_USAGE) | NOT_COMMANDS
        test_scripts = {s for s in executables() if re.match(r"tests/(?!detector/|scripts/make_json)", s)}
        missing = sorted(executables() - covered - test_scripts)
        self.assertEqual(missing, [], "scripts without a bad-usage case in test_usage.py")


class Lint(unittest.TestCase):
    def test_finds_extensionless_scripts(self):
        proc = subprocess.run([os.path.join(ROOT, "scripts", "lint"), "--list"], capture_output=True,
                              text=True, timeout=60, cwd=ROOT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        listed = set(proc.stdout.splitlines())
        for want in ("shell scripts/bench", "shell scripts/setup", "shell tests/golden/generate",
                     "shell scripts/compare", "python scripts/kbench/cli.py",
                     "python scripts/kbench/commands/compare.py"):
            self.assertIn(want, listed)
        self.assertFalse([f for f in listed if f.split(" ", 1)[1].startswith("results/")])


class OneLibrary(unittest.TestCase):
    """Scripts share one error/usage library per language, not copies of it."""

    OWN = re.compile(r"^\s*(die|usage_error|need_value|need_arg|scn_die)\s*\(\)", re.M)
    OWN_PY = re.compile(r"^def (die|usage_error)\(|^class \w+\(argparse\.ArgumentParser\)", re.M)

    def test_no_own_die(self):
        for script in sorted(executables() | {os.path.relpath(os.path.join(d, f), ROOT)
                                              for d, _, fs in os.walk(os.path.join(ROOT, "scripts"))
                                              for f in fs if f.endswith((".sh", ".py"))}):
            if script in ("tests/lib/cli_lib.sh", "scripts/kbench/cli.py"):
                continue
            with open(os.path.join(ROOT, script), encoding="utf-8", errors="replace") as f:
                text = f.read()
            with self.subTest(script=script):
                self.assertIsNone(self.OWN.search(text), "defines its own die/usage helpers")
                self.assertIsNone(self.OWN_PY.search(text), "defines its own die/usage helpers")


if __name__ == "__main__":
    unittest.main()
