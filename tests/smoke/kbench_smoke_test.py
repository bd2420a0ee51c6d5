"""Smoke test of the kbench binary: the first benchmark of every variant of every family
(kbench's own rows such as Produce/send and Codec/compress, and the reference rows such as
bare_producev, memcpy and direct_*) runs with a tiny min time, and the JSON carries the run
context (every key described by kbench --describe=json) and the counters docs/counters.md
lists."""

import json
import os
import re
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("KBENCH_BIN", os.path.join(HERE, "..", "..", "build", "kbench"))

CODEC_ROW = "Codec/compress/codec:zstd/level:3/payload:az/record_bytes:1000/batch_bytes:65536"


def describe():
    out = subprocess.run([BIN, "--describe=json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def undescribed(context):
    """The keys of a run's context that kbench --describe=json does not describe."""
    keys = [k["key"] for k in describe()["context"]["keys"]]
    return [c for c in context if not any(c == k or (k.endswith(".") and c.startswith(k))
                                          for k in keys)]


def every_run_keys():
    """The context keys kbench writes in every run (the description's keys with no "when")."""
    return [k["key"] for k in describe()["context"]["keys"]
            if k["written_by"] == "kbench" and not k["when"]]


def run_kbench(*args, env=None):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        path = out.name
    try:
        proc = subprocess.run(
            [BIN, f"--benchmark_out={path}", "--benchmark_out_format=json", *args],
            capture_output=True, text=True, timeout=500, env=env)
        data = None
        if os.path.getsize(path) > 0:
            with open(path) as f:
                data = json.load(f)
        return proc, data
    finally:
        os.unlink(path)


def described():
    return json.loads(subprocess.run([BIN, "--describe=json"], capture_output=True, text=True,
                                     timeout=60, check=True).stdout)


def is_reference(name, description):
    """A variant that runs no kbench code in its loop: what kbench's own rows are judged
    against (each family's "references" in kbench --describe=json)."""
    family, variant = name.split("/")[:2]
    return any(r["variant"] == variant for f in description["families"] if f["name"] == family
               for r in f["references"])


def variant_representatives():
    """All registered names, and the first registered name of each Family/variant.

    The first name of a family alone is often a reference row (Codec/memcpy,
    Produce/bare_producev), which would leave kbench's own code for that family unrun."""
    names = subprocess.run([BIN, "--benchmark_list_tests"], capture_output=True, text=True,
                           check=True, timeout=60).stdout.split()
    first = {}
    for name in names:
        first.setdefault("/".join(name.split("/")[:2]), name)
    return names, first


class SmokeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.names, cls.first = variant_representatives()

    def test_every_family_registers_its_own_rows_and_references(self):
        families = {key.split("/")[0] for key in self.first}
        description = described()
        self.assertEqual(families, {f["name"] for f in description["families"]})
        for family in families:
            own = [n for k, n in self.first.items()
                   if k.startswith(family + "/") and not is_reference(n, description)]
            self.assertTrue(own, f"{family} registers only reference rows")
        for f in description["families"]:
            # The family table of docs/families.md is generated from these two.
            self.assertTrue(f["measures"], f["name"])
            self.assertTrue(f["example"] in self.names,
                            f"{f['name']}'s example {f['example']} is not a row")
        for key in ("Produce/send", "Produce/bare_producev", "Produce/max_rate", "Codec/compress",
                    "Codec/memcpy", "Codec/direct_compress", "Batch/build", "Batch/memcpy",
                    "Batch/crc32c", "EndToEnd/latency"):
            self.assertIn(key, self.first)
        for name in self.names:
            # Google Benchmark itself appends /real_time to benchmarks timed in real time.
            self.assertRegex(name, r"^[A-Z][A-Za-z]+/[a-z_0-9]+(/[a-z_0-9]+:[^/]+)*(/real_time)?$",
                             name)

    def test_row_specs_expand_every_combination_in_order(self):
        def listed(flag, spec):
            family = "Produce/" if flag == "--produce" else "Consume/"
            out = subprocess.run([BIN, "--benchmark_list_tests", flag, spec], capture_output=True,
                                 text=True, check=True, timeout=60).stdout.split()
            return [n for n in out if n.startswith(family)]
        self.assertEqual(
            listed("--produce", "acks=1,threads=2|4,producers=per_thread|1"),
            ["Produce/send/acks:1/codec:none/record_bytes:100/threads:%d/producers:%d/real_time"
             % tp for tp in ((2, 2), (2, 1), (4, 4), (4, 1))])
        self.assertEqual(
            listed("--consume", "record_bytes=100|1000,partitions=1|16,records=4000"),
            ["Consume/read/record_bytes:%d/partitions:%d/records:4000/real_time" % rp
             for rp in ((100, 1), (100, 16), (1000, 1), (1000, 16))])
        # Defaults keep their names: keys a spec leaves at the default are not in them.
        self.assertEqual(listed("--consume", "partitions=4"),
                         ["Consume/read/record_bytes:100/partitions:4/real_time"])

    def test_codec_row_json_has_context_and_counters(self):
        memcpy = "Codec/memcpy/payload:az/record_bytes:1000/batch_bytes:65536"
        decompress = CODEC_ROW.replace("/compress/", "/decompress/")
        pattern = "^(" + "|".join(re.escape(n) for n in (CODEC_ROW, decompress, memcpy)) + ")$"
        proc, data = run_kbench(f"--benchmark_filter={pattern}", "--benchmark_min_time=0.01")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        ctx = data["context"]
        for key in every_run_keys():
            self.assertIn(key, ctx)
        self.assertEqual(undescribed(ctx), [])
        self.assertEqual(ctx["target"], "none")
        self.assertEqual(ctx["build_type"], "Release")
        runs = {b["name"]: b for b in data["benchmarks"]}
        self.assertEqual(set(runs), {CODEC_ROW, decompress, memcpy})
        for name in (CODEC_ROW, decompress):
            row = runs[name]
            self.assertFalse(row.get("error_occurred", False), row.get("error_message"))
            for counter in ("bytes_per_second", "items_per_second", "ratio", "compressed_bytes"):
                self.assertIn(counter, row)
                self.assertGreater(row[counter], 0)
            self.assertLess(row["ratio"], 0.7)  # az compresses to ~0.6 with zstd
            self.assertGreater(row["ratio"], 0.5)
        # 65 records of 1000 bytes per batch: items/s x 1000 == bytes/s.
        row = runs[CODEC_ROW]
        self.assertAlmostEqual(row["bytes_per_second"] / row["items_per_second"], 1000, delta=1)
        # Units as docs/counters.md gives them: compressed_bytes is the whole working set's
        # (ratio's denominator is the working set, 16 MiB at least), and bytes_per_second is
        # that working set per CPU-second (no /real_time on Codec rows), not per wall second.
        raw = row["compressed_bytes"] / row["ratio"]
        self.assertGreaterEqual(raw, 16 * 1024 * 1024 * 0.99)
        self.assertEqual(row["time_unit"], "ns")
        self.assertAlmostEqual(row["bytes_per_second"] * row["cpu_time"] / 1e9 / raw, 1, delta=1e-6)

    def test_direct_rows_report_their_own_output(self):
        # A file payload of equal 999-byte lines: 65 records fill a 64 KiB batch. zlib
        # compresses each batch here as the direct gzip calls do (level 6, gzip wrapper,
        # memLevel 8): the direct rows' compressed_bytes and ratio must be those bytes.
        import zlib
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "lines.txt")
            lines = [(("%05d,user-%02d,%s;" % (i, i % 97, "abcdefgh"[i % 8] * (i % 9))) * 100)[:999]
                     for i in range(500)]
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            proc, data = run_kbench("--payload=file:" + path, "--benchmark_min_time=0.01",
                                    "--benchmark_filter=^Codec/direct_(compress|decompress)/"
                                    "codec:gzip/")
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        gzip_key = next(c["version_key"] for c in describe()["codecs"] if c["name"] == "gzip")
        if data["context"].get(gzip_key) != zlib.ZLIB_RUNTIME_VERSION:
            self.skipTest("Python's zlib %s is not kbench's %s" % (
                zlib.ZLIB_RUNTIME_VERSION, data["context"].get(gzip_key)))
        expected = 0
        for b in range(0, len(lines), 65):
            z = zlib.compressobj(6, zlib.DEFLATED, 31, 8, zlib.Z_DEFAULT_STRATEGY)
            expected += len(z.compress("".join(lines[b:b + 65]).encode()) + z.flush())
        rows = {b["name"].split("/")[1]: b for b in data["benchmarks"]}
        self.assertEqual(set(rows), {"direct_compress", "direct_decompress"})
        for variant, row in rows.items():
            self.assertFalse(row.get("error_occurred", False), row.get("error_message"))
            self.assertEqual(row.get("compressed_bytes"), expected, variant)
            self.assertAlmostEqual(row["ratio"], expected / (999 * len(lines)), places=9,
                                   msg=variant)

    def test_every_variant_of_every_family_runs_clean(self):
        # The maximum-rate search runs on its own below (it takes many windows).
        names = [n for k, n in self.first.items() if k != "Produce/max_rate"]
        pattern = "^(" + "|".join(re.escape(n) for n in names) + ")$"
        env = dict(os.environ)
        env.pop("KBENCH_BOOTSTRAP", None)
        proc, data = run_kbench(f"--benchmark_filter={pattern}", "--benchmark_min_time=0.01",
                                env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        runs = {b["name"]: b for b in data["benchmarks"]}
        self.assertEqual(set(runs), set(names))
        for b in data["benchmarks"]:
            self.assertFalse(b.get("error_occurred", False), f"{b['name']}: {b.get('error_message')}")
            self.assertGreater(b["items_per_second"], 0, b["name"])
        self.assertEqual(data["context"]["target"], "mock")
        # kbench's own send path ran and every record it delivered is in the topic.
        send = runs[self.first["Produce/send"]]
        self.assertGreater(send["delivered_records"], 0)
        self.assertEqual(send["end_offsets"], send["delivered_records"])
        self.assertEqual(send["lost_records"], 0)
        self.assertEqual(send["duplicate_records"], 0)
        # Costs on every windowed row (Produce, Consume, EndToEnd): CPU per record > 0, the
        # thread split adds up to the client total, memory figures present.
        for key in ("Produce/send", "Produce/bare_producev", "Consume/read", "EndToEnd/latency"):
            row = runs[self.first[key]]
            for counter in ("cpu_us_per_record", "cpu_us_per_mb", "peak_rss_mb",
                            "voluntary_switches_per_1000_records", "cpu_accounting_gap"):
                self.assertIn(counter, row, key)
            self.assertGreater(row["cpu_us_per_record"], 0, key)
            self.assertGreater(row["peak_rss_mb"], 0, key)
            split = row["app_cpu_us_per_record"] + row["rdkafka_cpu_us_per_record"]
            self.assertAlmostEqual(split / row["cpu_us_per_record"], 1, delta=0.05, msg=key)
            self.assertLess(row["cpu_accounting_gap"], 0.05, key)
            self.assertGreater(row["mock_cpu_us_per_mb"], 0, key)  # the mock broker works too
        self.assertGreater(send["heap_bytes_per_inflight_record"], 0)
        self.assertGreater(send["rtt_p50_us"], 0)  # librdkafka's stage windows
        # How the client sent, from librdkafka's statistics over the window: a request
        # carries one batch per partition it holds, so at least a batch's records.
        for counter in ("requests_per_second", "records_per_request", "wakeups_per_record"):
            self.assertGreater(send.get(counter, 0), 0, counter)
        self.assertGreaterEqual(send["records_per_request"], 0.9 * send["records_per_batch"])
        self.assertIn("int_latency_p99_us", send)
        # The consumer's fetches: round trip from its own statistics; no produce queue.
        read = runs[self.first["Consume/read"]]
        self.assertGreater(read["rtt_p50_us"], 0)
        self.assertNotIn("int_latency_p50_us", read)
        self.assertTrue(data["context"]["broker_cost"].startswith("mock"))
        # End to end: every record received (the row fails otherwise), both latencies.
        e2e = runs[self.first["EndToEnd/latency"]]
        self.assertEqual(e2e["end_offsets"], e2e["delivered_records"])
        self.assertGreater(e2e["p50_us"], 0)
        self.assertGreater(e2e["delivery_p50_us"], 0)
        self.assertGreaterEqual(e2e["p99_us"], e2e["p50_us"])
        self.assertIn("end_to_end_clock", data["context"])

    def test_max_rate_search_reports_its_probes(self):
        # The search itself is tested against a model (tests/unit/rate_search_test.cc); here,
        # its wiring: probes run as checked windows and land in the JSON. On a machine whose
        # capacity swings by more than a grid step the row may fail to confirm a maximum,
        # which it must then say (and still show its probes), never report a number.
        name = self.first["Produce/max_rate"]
        env = dict(os.environ)
        env.pop("KBENCH_BOOTSTRAP", None)
        proc, data = run_kbench(f"--benchmark_filter=^{re.escape(name)}$",
                                "--window-seconds=1", "--warmup-seconds=0.5", env=env)
        search = data["benchmarks"][0]
        curve = data["kbench_rate_curves"][search["run_name"]][0]
        self.assertGreaterEqual(len(curve["target_rate"]), 2, curve)
        for key in ("sent_rate", "delivered_rate", "p50_us", "p99_us", "p999_us", "sustained"):
            self.assertEqual(len(curve[key]), len(curve["target_rate"]), key)
        if search.get("error_occurred"):
            self.assertEqual(proc.returncode, 1)
            self.assertIn("no confirmed maximum", search["error_message"])
            return
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        self.assertNotIn("items_per_second", search)
        self.assertEqual(search["end_offsets"], search["delivered_records"])
        self.assertEqual(len(curve["target_rate"]), search["rate_probes"])
        # Confirmed: two sustained probes at the maximum; then a light-load curve point.
        at_max = [ok for r, ok in zip(curve["target_rate"], curve["sustained"])
                  if r == search["max_rate"]]
        self.assertGreaterEqual(at_max.count(1), 2, curve)
        self.assertTrue([r for r in curve["target_rate"] if r < search["max_rate"] * 0.3], curve)

    def test_a_failed_setup_fails_its_row_and_the_run_goes_on(self):
        # Each cluster Work's factory (Produce send, bare_producev, max_rate; Consume) fails
        # on a topic the mock cannot hold: its row says why, the rows after it still run,
        # and the run exits 1.
        env = dict(os.environ)
        env.pop("KBENCH_BOOTSTRAP", None)
        proc, data = run_kbench(
            "--produce", "variant=send|bare_producev|max_rate,acks=1,replication=4",
            "--consume", "replication=4",
            f"--benchmark_filter=^(Produce/|Consume/|{re.escape(CODEC_ROW)}$)",
            "--benchmark_min_time=0.01", "--window-seconds=0.5", "--warmup-seconds=0.2", env=env)
        self.assertEqual(proc.returncode, 1, proc.stderr[-3000:])
        rows = {b["name"]: b for b in data["benchmarks"]}
        failed = [n for n in rows if n.startswith(("Produce/", "Consume/"))]
        self.assertEqual(len(failed), 4, list(rows))
        for name in failed:
            self.assertEqual(rows[name].get("error_message"),
                             "setup failed: replication factor 4 needs more than the mock's 3 "
                             "brokers", name)
        self.assertFalse(rows[CODEC_ROW].get("error_occurred", False), rows[CODEC_ROW])

    def test_costs_off_leaves_cost_counters_out(self):
        env = dict(os.environ)
        env.pop("KBENCH_BOOTSTRAP", None)
        name = self.first["Produce/bare_producev"]
        proc, data = run_kbench(f"--benchmark_filter=^{re.escape(name)}$", "--costs=off",
                                "--window-seconds=0.5", "--warmup-seconds=0.2", env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        self.assertNotIn("cpu_us_per_record", data["benchmarks"][0])
        self.assertTrue(data["context"]["client_cost"].startswith("off"))

    def test_client_settings_are_recorded_with_secrets_redacted(self):
        proc, data = run_kbench(f"--benchmark_filter=^{re.escape(CODEC_ROW)}$",
                                "--benchmark_min_time=0.01", "-X", "linger.ms=7",
                                "-X", "sasl.password=hunter2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        ctx = data["context"]
        self.assertEqual(ctx.get("client.linger.ms"), "7")
        self.assertEqual(ctx.get("client.sasl.password"), "***")
        self.assertEqual(undescribed(ctx), [])
        self.assertNotIn("hunter2", json.dumps(data))
        self.assertNotIn("hunter2", proc.stdout + proc.stderr)

    def test_fixed_iterations_for_instruction_counting(self):
        # Google Benchmark appends /iterations:N to the name of a fixed-count benchmark.
        env = dict(os.environ, KBENCH_FIXED_ITERATIONS="3")
        proc, data = run_kbench(f"--benchmark_filter=^{re.escape(CODEC_ROW)}/iterations:3$", env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(data["benchmarks"]), 1)
        self.assertEqual(data["benchmarks"][0]["iterations"], 3)


if __name__ == "__main__":
    unittest.main(verbosity=2)
