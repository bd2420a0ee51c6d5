"""scripts/ is one Python package on one interpreter: every Python file under scripts/ and
tests/ runs through scripts/lib/python (kbench's venv, scripts/ on PYTHONPATH), so none
edits sys.path or names another interpreter, and bash never carries a Python program of
its own in scripts/ (what it cannot do is a subcommand of a module of the package kbench). Each check
is first shown to find a planted offence, so that it cannot pass by finding nothing."""

import os
import re
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("KBENCH_PACKAGE_ROOT") or os.path.dirname(os.path.dirname(HERE))

# Files allowed an exception, each with its reason.
ALLOWED = {
    # Makes the venv: it runs before there is one.
    ("scripts/setup", "other interpreter"),
    # A stand-in for kbench or npm in tests: a program of its own, not a part of the package.
    ("tests/scripts/fake_oracle.py", "other interpreter"),
    ("tests/scripts/test_librdkafka.py", "other interpreter"),
    ("tests/scenarios/known_regressions_test.py", "other interpreter"),
    # The offences this test plants to show that it finds them.
    ("tests/scripts/test_package.py", "other interpreter"),
}

CHECKS = (
    # A Python file that puts a folder on the import path by hand.
    ("sys.path edit", re.compile(r"\bsys\.path\.(insert|append)\b|\bsite\.addsitedir\b"), ".py"),
    # Any interpreter but scripts/lib/python: a shebang or a command naming python3.
    ("other interpreter", re.compile(r"(^#!.*python|/usr/bin/python3|\bpython3 -[cm]\b)", re.M),
     "any"),
    # A command in bash running a Python program written inline: `python -c '...'`,
    # `python - <<EOF` (a test's shell script may still check a JSON file that way).
    ("inline Python", re.compile(r"""(python3?|\$\{?(py|PY|SCN_PY)\}?"?)\s+(-c\s|-\s)"""),
     "scripts shell"),
)
SKIPPED_DIRS = {"__pycache__", "golden", ".ruff_cache"}


def is_shell(path, text):
    return path.endswith(".sh") or text.startswith("#!/usr/bin/env bash") or text.startswith("#!/bin/bash")


def files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "scripts", "tests"], capture_output=True,
                         text=True, check=True).stdout.split()
    for rel in out:
        if set(rel.split("/")) & SKIPPED_DIRS:
            continue
        path = os.path.join(root, rel)
        if os.path.isfile(path):
            yield rel, path


def offences(root, tracked=None):
    """[(path, kind, line)] of every offence under root (tracked: [(rel, path)] instead of git's)."""
    found = []
    for rel, path in tracked if tracked is not None else files(root):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        shell = is_shell(rel, text)
        for kind, regex, where in CHECKS:
            if where == ".py" and not rel.endswith(".py"):
                continue
            if where == "scripts shell" and not (shell and rel.startswith("scripts/")):
                continue
            if (rel, kind) in ALLOWED:
                continue
            for m in regex.finditer(text):
                found.append((rel, kind, text.count("\n", 0, m.start()) + 1))
    return found


class OnePackage(unittest.TestCase):
    def test_planted_offences_are_found(self):
        with tempfile.TemporaryDirectory() as d:
            plants = {
                "a.py": ("import sys\nsys.path.insert(0, 'lib')\n", "sys.path edit"),
                "b.py": ("#!/usr/bin/python3\nprint(1)\n", "other interpreter"),
                "c.sh": ("#!/usr/bin/env bash\n\"$py\" -c 'import json'\n", "inline Python"),
                "d.sh": ("#!/usr/bin/env bash\n/usr/bin/python3 - x <<'PY'\nprint(1)\nPY\n",
                         "inline Python"),
                "e": ("#!/usr/bin/env bash\nx=$(python3 -c 'print(2)')\n", "inline Python"),
            }
            tracked = []
            for name, (text, _) in plants.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
                tracked.append(("scripts/" + name, os.path.join(d, name)))
            kinds = {(os.path.basename(p), k) for p, k, _ in offences(d, tracked)}
            for name, (_, kind) in plants.items():
                self.assertIn((name, kind), kinds)

    def test_the_checkout_has_none(self):
        self.assertEqual(offences(ROOT), [], "run Python through scripts/lib/python and the "
                         "package kbench (see docs/developing.md)")


class OneVenv(unittest.TestCase):
    def test_setup_and_the_interpreter_name_the_same_venv(self):
        from unittest import mock

        from kbench.commands import setup
        env = {k: v for k, v in os.environ.items() if k != "KBENCH_VENV"}
        env["KBENCH_CACHE"] = "/scratch/cache"
        shell = subprocess.run(["bash", "-c", 'source "$1"; kbench_venv', "-",
                                os.path.join(ROOT, "scripts", "lib", "venv.sh")],
                               env=env, capture_output=True, text=True, check=True).stdout.strip()
        with mock.patch.dict(os.environ, env, clear=True):
            self.assertEqual(setup.venv_dir(), shell)
        self.assertRegex(shell, r"^/scratch/cache/venv-[0-9a-f]{12}$")


if __name__ == "__main__":
    unittest.main()
