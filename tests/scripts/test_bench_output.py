"""scripts/bench's console and files hold everything kbench printed by the time it exits.

kbench's output reaches the console through tees; a tee that has not written kbench's last
lines when scripts/bench reports and exits loses them or puts them after the script's own.
A slow tee (a shim that sleeps before it starts) makes that race certain instead of rare."""

import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FAKE_KBENCH = """#!/bin/bash
echo "kbench: stdout line"
echo "kbench: error: LAST-LINE" >&2
exit 2
"""

SLOW_TEE = """#!/bin/sh
sleep 1
exec /usr/bin/tee "$@"
"""


def write_exe(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o755)


class BenchOutput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kbench-bench-output.")
        tree = os.path.join(self.tmp, "tree")
        shutil.copytree(os.path.join(ROOT, "scripts"), os.path.join(tree, "scripts"))
        os.makedirs(os.path.join(tree, "benchmarks"))
        shutil.copy(os.path.join(ROOT, "benchmarks", "profiles.conf"),
                    os.path.join(tree, "benchmarks"))
        # scripts/setup reads the codecs' Debian packages there.
        os.makedirs(os.path.join(tree, "harness", "codecs"))
        shutil.copy(os.path.join(ROOT, "harness", "codecs", "CMakeLists.txt"),
                    os.path.join(tree, "harness", "codecs"))
        os.makedirs(os.path.join(tree, "build"))
        write_exe(os.path.join(tree, "build", "kbench"), FAKE_KBENCH)
        shim = os.path.join(self.tmp, "bin")
        os.makedirs(shim)
        write_exe(os.path.join(shim, "tee"), SLOW_TEE)
        self.tree, self.shim = tree, shim

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_every_kbench_line_is_written_when_bench_exits(self):
        out = os.path.join(self.tmp, "out")
        env = dict(os.environ, PATH=self.shim + os.pathsep + os.environ["PATH"])
        env.pop("KBENCH_BOOTSTRAP", None)
        # Files, not pipes: a pipe's reader would wait for the tee and hide the race.
        err_path = os.path.join(self.tmp, "bench.err")
        with open(err_path, "w") as err_file, open(os.devnull, "w") as devnull:
            rc = subprocess.call([os.path.join(self.tree, "scripts", "bench"), "--mock",
                                  "--no-build", "--no-history", "--processes", "1", "--out", out],
                                 stdout=devnull, stderr=err_file, timeout=120, env=env,
                                 stdin=subprocess.DEVNULL)
        # Read at once: whatever is not there yet arrived after scripts/bench exited.
        with open(err_path, encoding="utf-8") as f:
            err = f.read()
        with open(os.path.join(out, "stderr.txt"), encoding="utf-8") as f:
            stderr_txt = f.read()
        with open(os.path.join(out, "console.txt"), encoding="utf-8") as f:
            console_txt = f.read()
        self.assertEqual(rc, 2, err)
        self.assertIn("LAST-LINE", err)
        self.assertIn("LAST-LINE", stderr_txt)
        self.assertIn("kbench: stdout line", console_txt)

if __name__ == "__main__":
    unittest.main()
