"""kbench loads and runs against every librdkafka release from 1.0.0 on.

- The binary references none of the C functions newer than 1.0.0 that it calls
  (harness/librdkafka_api.cc resolves them with dlsym): a direct call would stop the dynamic
  loader, or the first call, on an older librdkafka.so.1.
- A release that lacks features: a preloaded shim makes the loaded library report 1.0.0, so
  every check of harness/librdkafka_api.h takes its old-release path on the system's library.
  On kbench-mock (--mock=process) every row runs: batch.size becomes batch.num.messages and
  the row's label says so, Consume's repeated reads seek with rd_kafka_seek, and a
  transactions row is listed as not run with its reason, not as a failure (exit 0). On the
  release's own mock (--mock=embedded) the rows are not run, each with the reason. kbench-mock
  itself still runs the system's library (the run context says which mock ran)."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("KBENCH_BIN", os.path.join(ROOT, "build", "kbench"))
SHIM = "const char* rd_kafka_version_str(void) { return \"1.0.0\"; }\n" \
       "int rd_kafka_version(void) { return 0x010000ff; }\n"
FAST = ["--benchmark_min_time=0", "--window-seconds=0.3", "--warmup-seconds=0.1"]


def optional_functions():
    with open(os.path.join(ROOT, "harness", "librdkafka_api.cc")) as f:
        return re.findall(r'Resolve\(f\.\w+, "(rd_kafka_\w+)"\)', f.read())


class OldReleaseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kbench-old-release-")
        src = os.path.join(cls.tmp, "shim.c")
        with open(src, "w") as f:
            f.write(SHIM)
        cls.shim = os.path.join(cls.tmp, "libversion_1_0_0.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", cls.shim, src], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_kbench(self, args):
        out = os.path.join(self.tmp, "out.json")
        env = dict(os.environ, LD_PRELOAD=self.shim)
        proc = subprocess.run([BIN, *FAST, "--benchmark_out=" + out, "--benchmark_out_format=json", *args],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=240)
        with open(out) as f:
            return proc, json.load(f)

    def test_binary_links_no_function_newer_than_1_0_0(self):
        names = optional_functions()
        self.assertIn("rd_kafka_seek_partitions", names)
        undefined = subprocess.run(["nm", "-D", "--undefined-only", BIN], capture_output=True, text=True,
                                   check=True).stdout.split()
        self.assertEqual([n for n in names if n in undefined], [])

    def test_rows_run_on_kbench_mock_with_equivalents(self):
        proc, data = self.run_kbench([
            "--mock=process", "--benchmark_repetitions=2",
            "--benchmark_filter=^(Produce/send|Consume/read)/",
            "--produce=acks=1|all,record_bytes=100,batch_bytes=65536",
            "--produce=acks=all,record_bytes=100,producers=per_thread,transaction_records=100",
            "--consume=record_bytes=100,partitions=2,records=20000"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(data["context"]["librdkafka_version"], "1.0.0")
        self.assertRegex(data["context"]["broker_version"], r"^mock \(librdkafka \d+\.\d+\.\d+, kbench-mock process\)$")
        self.assertNotIn("1.0.0", data["context"]["broker_version"])
        rows = {b["name"]: b for b in data["benchmarks"] if b.get("run_type") == "iteration"}
        txn = [n for n in rows if "transaction_records:100" in n]
        self.assertEqual(len(txn), 1)
        self.assertEqual(rows[txn[0]]["error_message"], "not run: librdkafka 1.0.0 has no transactions (since 1.4.0)")
        self.assertIn("1 benchmark(s) not run", proc.stderr)
        ran = [b for n, b in rows.items() if n not in txn]
        self.assertEqual(len(ran), 3, list(rows))  # two Produce rows, one Consume row
        for b in ran:
            self.assertFalse(b.get("error_occurred"), b.get("error_message"))
            self.assertGreater(b["items_per_second"], 0)
        # The summary lists the row apart, not among failures.
        summary = subprocess.run([os.path.join(ROOT, "scripts", "lib", "python"), "-m", "kbench.summary",
                                  os.path.join(self.tmp, "out.json")], capture_output=True, text=True,
                                 env=dict(os.environ, KBENCH_BIN=BIN))
        self.assertEqual(summary.returncode, 0, summary.stderr)
        self.assertIn("1 benchmark(s) not run", summary.stdout)
        self.assertIn("not run: librdkafka 1.0.0 has no transactions", summary.stdout)
        self.assertNotIn("FAILED", summary.stdout)
        for b in ran:
            if b["name"].startswith("Produce/"):
                # 65536 / (100 value bytes + 12 of framing)
                self.assertEqual(b["label"], "batch.num.messages=585 for batch.size=65536 "
                                             "(librdkafka 1.0.0 has no batch.size)")

    def test_rows_are_not_run_on_the_releases_own_mock(self):
        proc, data = self.run_kbench(["--mock=embedded", "--benchmark_filter=^Produce/send/",
                                      "--produce=acks=1,record_bytes=100"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(data["context"]["broker_version"], "mock (librdkafka 1.0.0, in process)")
        (row,) = [b for b in data["benchmarks"] if b.get("run_type") == "iteration"]
        self.assertEqual(row["error_message"], "not run: librdkafka 1.0.0 has no in-process mock cluster "
                                               "(since 1.3.0); --mock=process runs it on kbench-mock")


if __name__ == "__main__":
    unittest.main()
