"""A scenario is a folder scripts/scenarios/NAME/ (run.py, report.py, README.md) plus its line in
scripts/scenarios/registry: the two agree, every README has its sections, every runner and
report refuses bad usage with exit 2, and no scenario keeps a fixed port."""

import json
import os
import re
import subprocess
import tempfile
import unittest

from kbench import scenario as ks

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
        out = ks.sum_processes([p1, p2], ["p1.json", "p2.json"])
        self.assertEqual([b["items_per_second"] for b in out["benchmarks"]], [110, 220, 330])
        (_p, m), = ks.spread_table(out).values()
        self.assertEqual((m["items_per_second"].lo, m["items_per_second"].hi), (110, 330))

    def test_sum_refuses_unequal_repetitions_and_errors(self):
        p1 = {"context": {}, "benchmarks": _entries("Produce/x", [100, 200, 300])}
        p2 = {"context": {}, "benchmarks": _entries("Produce/x", [10, 20])}
        with self.assertRaisesRegex(ks.ScenarioError, "different numbers of repetitions"):
            ks.sum_processes([p1, p2], ["p1.json", "p2.json"])
        bad = {"context": {}, "benchmarks": _entries("Produce/x", [1], error_occurred=True,
                                                       error_message="lost 5 records")}
        with self.assertRaisesRegex(ks.ScenarioError, "lost 5 records"):
            ks.sum_processes([p1, bad], ["p1.json", "bad.json"])


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
