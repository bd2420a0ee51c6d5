"""tests/detector/plant_slowdown.py edits kbench's sources by exact anchors; when those
sources change, the detector experiment breaks only when someone reruns it. These tests
apply both plants to a copy of today's files, so a change that moves an anchor fails here."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PLANT = os.path.join(ROOT, "tests", "detector", "plant_slowdown.py")
FILES = ("fixtures/runner.h", "benchmarks/codec_bench.cc", "harness/producer.cc")


class PlantSlowdown(unittest.TestCase):
    def setUp(self):
        self.repo = tempfile.mkdtemp(prefix="kbench-plant-test.")
        self.addCleanup(shutil.rmtree, self.repo)
        for f in FILES:
            os.makedirs(os.path.join(self.repo, os.path.dirname(f)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, f), os.path.join(self.repo, f))

    def plant(self, *args):
        return subprocess.run([sys.executable, PLANT, *args], capture_output=True, text=True,
                              timeout=60)

    def read(self, f):
        with open(os.path.join(self.repo, f), encoding="utf-8") as fh:
            return fh.read()

    def test_spin_applies_to_todays_runner(self):
        proc = self.plant("spin", self.repo, "0.1", "Codec/compress/x")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("DETECTOR EXPERIMENT ONLY", self.read("fixtures/runner.h"))

    def test_instructions_apply_to_todays_codec_bench(self):
        proc = self.plant("instructions", self.repo, "0.01")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("DetectorSlowBytes", self.read("benchmarks/codec_bench.cc"))

    def test_send_applies_to_todays_producer_driver(self):
        proc = self.plant("send", self.repo, "0.1", "Produce/send/acks:1/real_time")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        src = self.read("harness/producer.cc")
        self.assertIn('options_.progress_label == "Produce/send/acks:1"', src)
        self.assertIn("detector_mark = clock_ns;", src)

    def test_a_moved_anchor_is_an_error(self):
        with open(os.path.join(self.repo, "fixtures/runner.h"), "w", encoding="utf-8") as fh:
            fh.write("// nothing to anchor on\n")
        proc = self.plant("spin", self.repo, "0.1", "Codec/compress/x")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("update plant_slowdown.py", proc.stderr)


if __name__ == "__main__":
    unittest.main()
