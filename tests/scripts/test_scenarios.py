"""A scenario is a folder scripts/scenarios/NAME/ (run, report.py, README.md) plus its line in
scripts/scenarios/registry: the two agree, every README has its sections, every runner and
report refuses bad usage with exit 2, and no scenario keeps a fixed port."""

import os
import re
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCENARIOS = os.path.join(ROOT, "scripts", "scenarios")
SECTIONS = ("## Purpose", "## What it reproduces", "## Scale", "## What differs from the original")


def registry():
    """{name: (seed, title)} of scripts/scenarios/registry."""
    out = {}
    with open(os.path.join(SCENARIOS, "registry"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.lstrip().startswith("#"):
                name, seed, title = line.split(None, 2)
                out[name] = (seed, title.strip())
    return out


def folders():
    return sorted(n for n in os.listdir(SCENARIOS) if os.path.isdir(os.path.join(SCENARIOS, n))
                  and n != "__pycache__")


class Registry(unittest.TestCase):
    def test_one_line_per_folder(self):
        self.assertEqual(sorted(registry()), folders())

    def test_seeds_are_seed_numbers(self):
        for name, (seed, title) in registry().items():
            self.assertRegex(seed, r"^\d{3}$", name)
            self.assertTrue(title, name)

    def test_scenario_lists_the_registry(self):
        proc = subprocess.run([os.path.join(ROOT, "scripts", "scenario"), "--list"], capture_output=True,
                              text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.split(), list(registry()))


class Folders(unittest.TestCase):
    def test_each_holds_runner_report_readme(self):
        for name in folders():
            d = os.path.join(SCENARIOS, name)
            with self.subTest(scenario=name):
                self.assertTrue(os.access(os.path.join(d, "run"), os.X_OK), "run is not executable")
                self.assertTrue(os.path.isfile(os.path.join(d, "report.py")))
                with open(os.path.join(d, "README.md"), encoding="utf-8") as f:
                    readme = f.read()
                self.assertTrue(readme.startswith("# %s (seed %s)" % (name, registry()[name][0])))
                for section in SECTIONS:
                    self.assertIn("\n" + section + "\n", readme)

    def test_report_bad_usage_exits_2(self):
        for name in folders():
            with self.subTest(scenario=name):
                proc = subprocess.run(["/usr/bin/python3", os.path.join(SCENARIOS, name, "report.py")],
                                      capture_output=True, text=True, timeout=60)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertRegex(proc.stderr, r"(?m)^report\.py: error: ")

    def test_no_fixed_ports(self):
        # Clusters start with scripts/kafka --port-base auto: no scenario keeps a port number.
        for name in folders():
            with open(os.path.join(SCENARIOS, name, "run"), encoding="utf-8") as f:
                text = f.read()
            with self.subTest(scenario=name):
                fixed = re.search(r"PORT_BASE|--port-base (?!auto)", text)
                self.assertIsNone(fixed, fixed and fixed.group(0))


if __name__ == "__main__":
    unittest.main()
