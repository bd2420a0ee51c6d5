"""A scenario is a folder scripts/scenarios/NAME/ (run.py, report.py, README.md) plus its line in
scripts/scenarios/registry: the two agree, every README has its sections, every runner and
report refuses bad usage with exit 2, and no scenario keeps a fixed port."""

import json
import os
import re
import subprocess
import tempfile
import unittest

from kbench import results as kr
from kbench import scenario as ks
from kbench.scenario_runner import sibling

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
        # A seed is the number of the published experiment a scenario reruns; - for none.
        for name, (seed, title) in registry().items():
            self.assertRegex(seed, r"^(\d{3}|-)$", name)
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
                self.assertTrue(os.path.isfile(os.path.join(d, "run.py")), "no runner run.py")
                self.assertTrue(os.path.isfile(os.path.join(d, "report.py")))
                with open(os.path.join(d, "README.md"), encoding="utf-8") as f:
                    readme = f.read()
                seed = registry()[name][0]
                self.assertTrue(readme.startswith("# %s (seed %s)\n" % (name, seed) if seed != "-"
                                                  else "# %s\n" % name), readme.split("\n")[0])
                for section in SECTIONS:
                    self.assertIn("\n" + section + "\n", readme)

    def test_report_bad_usage_exits_2(self):
        for name in folders():
            with self.subTest(scenario=name):
                proc = subprocess.run([os.path.join(ROOT, "scripts", "lib", "python"),
                                       os.path.join(SCENARIOS, name, "report.py")],
                                      capture_output=True, text=True, timeout=60)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertRegex(proc.stderr, r"(?m)^report\.py: error: ")

    def test_no_fixed_ports(self):
        # Clusters start with scripts/kafka --port-base auto: no scenario keeps a port number.
        for name in folders():
            with open(os.path.join(SCENARIOS, name, "run.py"), encoding="utf-8") as f:
                text = f.read()
            with self.subTest(scenario=name):
                fixed = re.search(r"PORT_BASE|--port-base (?!auto)", text)
                self.assertIsNone(fixed, fixed and fixed.group(0))


if __name__ == "__main__":
    unittest.main()


# ------------------------------------------------------------------ spreads and orderings


def _entries(name, values, key="items_per_second", **extra):
    return [dict({"name": name, "run_name": name, "run_type": "iteration", "repetitions": len(values),
                  "repetition_index": i, "threads": 1, "iterations": 1, "real_time": 2e9,
                  "cpu_time": 1e9, "time_unit": "ns", key: v}, **extra)
            for i, v in enumerate(values)]


class Spreads(unittest.TestCase):
    def test_order_needs_three_repetitions_and_disjoint_ranges(self):
        a = ks.Spread.of([10, 11, 12])
        self.assertEqual(ks.order(a, ks.Spread.of([7, 8, 9])), 1)
        self.assertEqual(ks.order(ks.Spread.of([7, 8, 9]), a), -1)
        self.assertEqual(ks.order(a, ks.Spread.of([8, 9, 10])), 0)  # touching ranges overlap
        self.assertEqual(ks.order(ks.Spread.of([10, 11]), ks.Spread.of([1, 2])), 0)  # 2 a side
        self.assertEqual(ks.order(a, None), 0)

    def test_fmt_spread_shows_median_and_range(self):
        self.assertEqual(ks.fmt_spread(ks.Spread.of([3e5, 1e5, 2e5])), "200 k [100 k–300 k]")
        self.assertEqual(ks.fmt_spread(ks.Spread.of([2e5])), "200 k")
        self.assertEqual(ks.fmt_spread(None), "—")

    def test_sum_adds_repetition_i_of_each_process(self):
        p1 = {"context": {}, "benchmarks": _entries("Produce/x", [100, 200, 300])}
        p2 = {"context": {}, "benchmarks": _entries("Produce/x", [10, 20, 30])}
        out = kr.merge_runs([p1, p2], ["p1.json", "p2.json"], concurrent=True)
        self.assertEqual([b["items_per_second"] for b in out["benchmarks"]], [110, 220, 330])
        (_p, m), = ks.spread_table(out).values()
        self.assertEqual((m["items_per_second"].lo, m["items_per_second"].hi), (110, 330))

    def test_sum_refuses_unequal_repetitions_and_errors(self):
        p1 = {"context": {}, "benchmarks": _entries("Produce/x", [100, 200, 300])}
        p2 = {"context": {}, "benchmarks": _entries("Produce/x", [10, 20])}
        with self.assertRaisesRegex(kr.BenchmarkJsonError, "different numbers of repetitions"):
            kr.merge_runs([p1, p2], ["p1.json", "p2.json"], concurrent=True)
        bad = {"context": {}, "benchmarks": _entries("Produce/x", [1], error_occurred=True,
                                                       error_message="lost 5 records")}
        with self.assertRaisesRegex(kr.BenchmarkJsonError, "lost 5 records"):
            kr.merge_runs([p1, bad], ["p1.json", "bad.json"], concurrent=True)


def _report(scenario, files, *extra):
    """Run a scenario's report.py on prepared JSON; returns report.md's text."""
    with tempfile.TemporaryDirectory() as d:
        for fname, data in files.items():
            with open(os.path.join(d, fname), "w", encoding="utf-8") as f:
                json.dump(data, f)
        subprocess.run([os.path.join(ROOT, "scripts", "lib", "python"),
                        os.path.join(SCENARIOS, scenario, "report.py"), d, "--scale", "small"]
                       + list(extra), check=True, capture_output=True, text=True)
        with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
            return f.read()


def _acks_name(size, acks, rf, batched=True):
    batch = 200 * size if batched else size
    return ("Produce/send/acks:%s/codec:none/record_bytes:%d/batch_bytes:%d/partitions:3/"
            "replication:%d/real_time" % (acks, size, batch, rf))


class ReportsOrderOnlyWhatTheyShow(unittest.TestCase):
    def test_acks_replication_orders_disjoint_cells_only(self):
        benches = []
        # acks 1 clearly above acks all at 1000 B; acks all above acks 1 at 300 B but overlapping.
        for size, acks, values in ((1000, "1", [300, 310, 320]), (1000, "all", [200, 210, 220]),
                                   (300, "1", [170, 200, 230]), (300, "all", [190, 250, 260])):
            benches += _entries(_acks_name(size, acks, 2), [v * ks.MIB for v in values],
                                key="bytes_per_second", items_per_second=1000.0)
        text = _report("acks-replication", {"single.json": {"context": {}, "benchmarks": benches}})
        self.assertIn("1000 B, replication 2: acks LEADER > acks ALL", text)
        self.assertIn("300 B, replication 2: acks LEADER ≈ acks ALL", text)
        self.assertNotIn("acks ALL > acks LEADER", text)
        self.assertIn("310 [300–320]", text)

    def test_producer_sharing_names_the_cells_it_cannot_tell_from_the_best(self):
        def name(threads, producers):
            return ("Produce/send/acks:1/codec:none/record_bytes:250-750/batch_bytes:65536/"
                    "payload:random/linger_ms:1/threads:%d/producers:%d/real_time" % (threads, producers))
        benches = (_entries(name(8, 2), [250e3, 260e3, 270e3]) + _entries(name(8, 8), [240e3, 245e3, 255e3])
                   + _entries(name(8, 1), [100e3, 110e3, 120e3]))
        text = _report("producer-sharing", {"producer-sharing.json": {"context": {}, "benchmarks": benches}})
        self.assertIn("Highest median: **8 threads sharing 2 clients**: 260 k [250 k–270 k]", text)
        self.assertIn("Not ordered against it (ranges overlap): 8 threads with dedicated client per thread.",
                      text)
        self.assertNotIn("sharing 1 client.", text.split("Not ordered against it")[1].split("\n")[0])


class ParetoBeyondSpreads(unittest.TestCase):
    def test_front_only_where_the_advantage_is_outside_the_ranges(self):
        s = ks.Spread.of
        marks = ks.pareto_marks([
            ("none", s([100, 110]), s([1.00, 1.01])),  # least CPU by far
            ("fast", s([300, 320]), s([0.50, 0.51])),  # clearly fewer bytes than none, less CPU than best
            ("best", s([900, 950]), s([0.30, 0.31])),  # fewest bytes by far
            ("near", s([310, 330]), s([0.49, 0.52])),  # within fast's ranges on both axes
            ("worse", s([400, 420]), s([0.60, 0.61])),  # beaten by fast on both
        ])
        self.assertEqual(marks, {"none": ks.FRONT, "fast": ks.UNDECIDED, "best": ks.FRONT,
                                 "near": ks.UNDECIDED, "worse": ks.DOMINATED})

    def test_one_repetition_claims_nothing(self):
        s = ks.Spread.of
        marks = ks.pareto_marks([("a", s([1]), s([2])), ("b", s([2]), s([1])), ("c", s([3]), s([3]))])
        self.assertEqual(set(marks.values()), {ks.UNDECIDED})


def _cc_name(family, codec, payload=None, level=None):
    """A compression-cost row name as kbench writes it."""
    codec_part = "codec:%s" % codec + ("/level:%s" % level if level else "")
    payload_part = "/payload:%s" % payload if payload else ""
    if family == "Produce":
        return ("Produce/send/acks:1/%s/record_bytes:1000/threads:1/producers:1%s/real_time"
                % (codec_part, payload_part))
    return ("EndToEnd/latency/acks:1/%s/record_bytes:1000/rate:2000/partitions:2%s/real_time"
            % (codec_part, payload_part))


class CompressionCostReport(unittest.TestCase):
    def _produce(self, codec, level, cpu, batch_bytes):
        # Two rounds; the ratio counter (window-edge noise) deliberately disagrees with the
        # batches' own figures, which the report must use.
        return _entries(_cc_name("Produce", codec, level=level), [50e3, 52e3], cpu_us_per_mb=cpu,
                        bytes_per_second=50e6, avg_batch_bytes=batch_bytes, records_per_batch=1000.0,
                        ratio=0.1, wire_bytes_per_second=1e6)

    def test_cells_carry_ranges_and_the_front_is_judged_beyond_them(self):
        # items_per_second 50e3 and 52e3 with bytes_per_second 50e6: values of 1000 and 961.5 B.
        benches = (self._produce("none", None, 300.0, 1.015e6) + self._produce("lz4", "1", 900.0, 0.45e6)
                   + self._produce("zstd", "1", 2000.0, 0.30e6))
        e2e = (_entries(_cc_name("EndToEnd", "none"), [800.0, 900.0], key="p99_us", rate_shortfall=0.0)
               + [dict(e, rate_shortfall=float(i)) for i, e in
                  enumerate(_entries(_cc_name("EndToEnd", "zstd", level="1"), [5e4, 6e4], key="p99_us"))])
        codec = _entries("Codec/compress/codec:zstd/level:1/payload:az/record_bytes:1000/batch_bytes:1048576",
                         [0.300], key="ratio")
        text = _report("compression-cost", {"produce.json": {"context": {}, "benchmarks": benches},
                                            "end_to_end.json": {"context": {}, "benchmarks": e2e},
                                            "codec.json": {"context": {}, "benchmarks": codec}})
        rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
                for line in text.splitlines() if line.startswith("| ") and "records/s" not in line}
        # records/s with its range; bytes per value byte from the batches (not ratio=0.1).
        self.assertEqual(rows["zstd:1"][0], "51 k [50 k–52 k]")
        self.assertEqual(rows["zstd:1"][3], "0.306 [0.300–0.312]")
        self.assertEqual(rows["zstd:1"][4:6], ["0.300", "+2.0 %"])  # the Codec family's ratio
        self.assertEqual(rows["lz4:1"][4:6], ["—", "—"])  # none ran for lz4 here
        self.assertIn("⚠ short in 1 of 2", rows["zstd:1"][7])
        self.assertNotIn("⚠", rows["none"][7])
        self.assertEqual([rows[c][8] for c in ("none", "lz4:1", "zstd:1")], ["●", "●", "●"])


# ------------------------------------------------------------------ perf-test: the tools' formats

PRODUCE_JSON = {"context": {"librdkafka_version": "2.0.2"}, "benchmarks": [
    {"name": "Codec/compress/x", "run_type": "iteration", "iterations": 5, "real_time": 1.0, "time_unit": "ns"},
    {"name": "Produce/send/acks:1/real_time", "run_type": "iteration", "iterations": 1,
     "real_time": 2000000000.0, "time_unit": "ns", "items_per_second": 50000.0,
     "bytes_per_second": 104857600.0, "avg_us": 12345.0, "max_us": 250999.0,
     "p50_us": 1999.0, "p95_us": 92000.0, "p99_us": 108100.0, "p999_us": 112999.0}]}
# The tool's run: 1000 warm-up records (two interval lines hold some: both left out), its
# final line and its steady-state line.
TOOL_OUTPUT = [
    "600 records sent, 120.0 records/sec (0.01 MB/sec), 5.0 ms avg latency, 9.0 ms max latency.",
    "500 records sent, 100.0 records/sec (0.01 MB/sec), 5.0 ms avg latency, 9.0 ms max latency.",
    "50000 records sent, 10000.0 records/sec (0.95 MB/sec), 2.0 ms avg latency, 9.0 ms max latency.",
    "60000 records sent, 12000.0 records/sec (1.14 MB/sec), 2.0 ms avg latency, 9.0 ms max latency.",
    "101000 records sent, 9000.000000 records/sec (0.86 MB/sec), 3.00 ms avg latency, 20.00 ms max "
    "latency, 2 ms 50th, 5 ms 95th, 9 ms 99th, 19 ms 99.9th.",
    "100000 steady state records sent, 11000.000000 records/sec (1.05 MB/sec), 2.50 ms avg latency, "
    "20.00 ms max latency, 2 ms 50th, 5 ms 95th, 8 ms 99th, 19 ms 99.9th."]
KBENCH_STDERR = [
    "2026-01-01 kbench noise",
    "Produce/send/acks:1/real_time: 250000 records sent, 50000.0 records/sec (4.77 MB/sec), 1.0 ms avg "
    "latency, 2.0 ms max latency. (warm-up)",
    "Consume/read/x (fill): 10 records sent, 1.0 records/sec (0.00 MB/sec), 1.0 ms avg latency, 1.0 ms "
    "max latency.",
    "Produce/send/acks:1/real_time: 245000 records sent, 49000.0 records/sec (4.67 MB/sec), 1.0 ms avg "
    "latency, 2.0 ms max latency.",
    "Produce/send/acks:1/real_time: 255000 records sent, 51000.0 records/sec (4.86 MB/sec), 1.0 ms avg "
    "latency, 2.0 ms max latency. (final)"]


class PerfTestFormat(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="kbench-perf-format-")
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, content):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(content if isinstance(content, str) else
                    json.dumps(content) if isinstance(content, dict) else "\n".join(content) + "\n")
        return path

    def test_kbench_rows_in_the_tools_lines(self):
        ptf = sibling(os.path.join(SCENARIOS, "perf-test", "run.py"), "report")
        r = ptf.kbench_producer(self.write("produce.json", PRODUCE_JSON))
        self.assertEqual(ptf.final_line(r), "100000 records sent, 50000.000000 records/sec (100.00 MB/sec), "
                         "12.35 ms avg latency, 251.00 ms max latency, 1 ms 50th, 92 ms 95th, 108 ms 99th, "
                         "112 ms 99.9th.")
        windows = ptf.kbench_windows(self.write("produce.err", KBENCH_STDERR))
        self.assertEqual(len(windows), 2)  # label stripped; warm-up, fill and other lines dropped
        self.assertTrue(all(ptf.PRODUCER_WINDOW_RE.match(w) for w in windows))
        consume = {"benchmarks": [{"name": "Consume/read/record_bytes:100/partitions:4/real_time",
                                   "run_type": "iteration", "iterations": 2, "real_time": 250.0,
                                   "time_unit": "ms", "items_per_second": 400000.0,
                                   "bytes_per_second": 41943040.0}]}
        (c,) = ptf.kbench_consumers(self.write("consume.json", consume), 1767225600500)
        self.assertRegex(ptf.consumer_line(c), r", 20\.0000, 40\.0000, 200000, 400000\.0000, 0, 500, "
                                               r"40\.0000, 400000\.0000$")
        failed = {"benchmarks": [{"name": "Produce/send/x", "run_type": "iteration", "error_occurred": True,
                                  "error_message": "boom"}]}
        with self.assertRaisesRegex(ptf.InputError, "boom"):
            ptf.kbench_producer(self.write("failed.json", failed))

    def test_the_comparison_takes_the_steady_state_after_the_warm_up(self):
        ptf = sibling(os.path.join(SCENARIOS, "perf-test", "run.py"), "report")
        tool = ptf.tool_producer(self.write("tool.txt", TOOL_OUTPUT), 1000)
        kb = ptf.kbench_producer(self.write("produce.json", PRODUCE_JSON))
        kb_windows = ptf.kbench_windows(self.write("produce.err", KBENCH_STDERR[3:]))
        lines, summary = ptf.comparison_lines(24, [tool, tool], [kb, kb], tool["windows"] * 2, kb_windows * 2, 1000)
        self.assertIn("kafka-producer-perf-test  100000 records sent, 11000.000000 records/sec (1.05 MB/sec), "
                      "2.50 ms avg latency, 20.00 ms max latency, 2 ms 50th, 5 ms 95th, 8 ms 99th, 19 ms 99.9th.",
                      lines)
        self.assertIn("perf-test: 4 intervals, median 11000.0 records/sec (10000.0..12000.0), cv 9.1 %; "
                      "kbench: 4 intervals, median 50000.0 records/sec (49000.0..51000.0), cv 2.0 %; "
                      "medians x4.55", lines[-2])
        self.assertIn("fewer than 3 rounds", lines[-1])
        self.assertEqual(summary["perf_test_intervals"]["n"], 4)
        lines, _ = ptf.comparison_lines(24, [tool] * 3, [kb] * 3, [], [], 1000)
        self.assertNotIn("fewer than 3 rounds", "\n".join(lines))
        with self.assertRaisesRegex(ptf.InputError, "no steady-state line although the tool had 1000 warm-up"):
            ptf.tool_producer(self.write("cold.txt", TOOL_OUTPUT[:5]), 1000)

    def test_the_report_of_two_rounds(self):
        produce, err = self.write("p.json", PRODUCE_JSON), self.write("p.err", KBENCH_STDERR)
        tool = self.write("tool.txt", TOOL_OUTPUT)
        steps = [{"case": "custom", "round": r, "first": first, "kind": kind, "path": path, "aux": aux}
                 for r, first in ((1, "tool"), (2, "kbench"))
                 for kind, path, aux in (("kbench-produce", produce, err), ("tool-produce", tool, None))]
        settings = {"scale": "small", "rounds": 2, "tools": 1, "batch_size": "16384", "acks": "1"}
        self.write("run.json", {"settings": settings, "rounds": steps, "cases": [
            {"name": "custom", "records": 100000, "size": 100, "tput": -1, "warm": 1000, "qmsgs": 335545}]})
        proc = subprocess.run([os.path.join(ROOT, "scripts", "lib", "python"),
                               os.path.join(SCENARIOS, "perf-test", "report.py"), self.tmp.name],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("-- round 2 (kbench first)", proc.stdout)
        self.assertRegex(proc.stdout, r"(?m)^ratio +records/sec x4\.55")
        with open(os.path.join(self.tmp.name, "report.md"), encoding="utf-8") as f:
            self.assertRegex(f.read(), r"\| custom +\| kafka-producer-perf-test +\| 2 +\| 11000\.0 ")


class PerfTestCases(unittest.TestCase):
    """perf-test's cases: the seed's, or one of your own in kafka-producer-perf-test's options,
    both clients set alike."""

    def cases(self, *argv):
        from kbench.commands import scenario
        args = scenario.parser().parse_args(["perf-test", *argv])
        return scenario.runner("perf-test").cases(args)

    def test_the_seed_cases(self):
        cases = self.cases("--tiny", "--cases", "10k-2000B")
        self.assertEqual([(c["name"], c["records"], c["warm"], c["qmsgs"]) for c in cases],
                         [("10k-2000B", 2000, 200, 16778)])
        self.assertIn("batch.size=8196", cases[0]["props"])
        self.assertRegex(cases[0]["spec"], r"acks=1,.*batch_bytes=8196,linger_ms=0,.*partitions=15,"
                                           r"replication=1,warmup=200,threads=1,producers=1,rate=10000$")
        self.assertEqual(len(self.cases("--scale", "full")), 3)

    def test_a_case_of_your_own(self):
        (c,) = self.cases("--num-records", "3000", "--acks", "-1", "--producer-props", "linger.ms=1",
                          "compression.type=zstd", "compression.zstd.level=3", "socket.nagle.disable=true")
        self.assertEqual((c["name"], c["records"], c["warm"], c["size"], c["tput"]), ("custom", 3000, 300, 100, -1))
        self.assertRegex(c["spec"], r"^acks=all,codec=zstd,level=3,record_bytes=100,.*linger_ms=1,.*"
                                    r"partitions=2,replication=1,warmup=300,threads=1,producers=1$")
        self.assertEqual(c["xargs"], ["-X", "queue.buffering.max.kbytes=32768", "-X",
                                      "queue.buffering.max.messages=335545", "-X", "socket.nagle.disable=true"])
        self.assertIn("compression.zstd.level=3", c["props"])
