"""kbench.commands.distributed: the exact merge of several agents' kbench JSON, the
workload checks (no secrets, no unknown keys) and scripts/distributed's refusals."""

import json
import os
import random
import subprocess
import tempfile
import unittest

from kbench import facts
from kbench.commands import distributed as kd

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


NAME = "Produce/send/acks:1/codec:none/record_bytes:100/threads:1/producers:1/rate:1000/real_time"


def bucket_of(v):
    """Upper bound of v's bucket in harness/histogram.cc (7 sub-bits)."""
    if v < 128:
        return v
    shift = v.bit_length() - 1 - 7
    return (((v >> shift) + 1) << shift) - 1


def histogram(samples):
    b = {}
    for v in samples:
        b[bucket_of(v)] = b.get(bucket_of(v), 0) + 1
    return {"latency_buckets": sorted([k, n] for k, n in b.items()),
            "latency_count": len(samples), "latency_sum_us": sum(samples),
            "latency_min_us": min(samples), "latency_max_us": max(samples)}


def agent_json(samples, start, rps, error=None, delivered_rate=None):
    h = histogram(samples)
    row = {"name": NAME, "run_name": NAME, "run_type": "iteration", "repetitions": 1,
           "repetition_index": 0, "iterations": 1, "real_time": 2e9, "cpu_time": 1e8,
           "time_unit": "ns", "items_per_second": rps, "bytes_per_second": rps * 100,
           "target_rate": 1000.0, "achieved_rate": rps, "rate_shortfall": 0.0,
           "delivered_rate": rps if delivered_rate is None else delivered_rate,
           "delivered_records": 3000.0, "errors": 0.0, "avg_batch_bytes": 500.0}
    row.update(kd.latency_counters(h, open_loop=True))
    if error:
        row["error_occurred"], row["error_message"] = True, error
    series = {"repetition_index": 0, "seconds": [1.0, 1.0], "records_per_second": [rps, rps],
              "mb_per_second": [rps * 100 / kd.MIB] * 2, "start_unix_seconds": start}
    series.update(h)
    return {"context": {"target": "live"}, "benchmarks": [row],
            "kbench_intervals": {NAME: [series]}}


class MergeTest(unittest.TestCase):
    def setUp(self):
        rng = random.Random(3)
        self.samples = [[int(rng.lognormvariate(7, 1.1)) + 50 * a for _ in range(2000 + 700 * a)]
                        for a in range(3)]
        self.results = {"agent-%d" % a: agent_json(s, 1000.0 + 0.01 * a, 1000.0)
                        for a, s in enumerate(self.samples)}

    def test_percentiles_are_those_of_the_pooled_samples(self):
        rows, intervals, errors = kd.merge(self.results, {})
        self.assertEqual(errors, [])
        pooled = histogram([v for s in self.samples for v in s])
        quantiles = facts.latency()["quantiles"]
        self.assertIn("p99_us", [q["metric"] for q in quantiles])
        for q in quantiles:
            want = kd.percentile(pooled["latency_buckets"], pooled["latency_count"],
                                 pooled["latency_max_us"], q["q"])
            self.assertEqual(rows[0][q["metric"]], want, q["metric"])
        # ... and not the mean of the agents' percentiles (they differ here on purpose).
        mean_p99 = sum(r["benchmarks"][0]["p99_us"] for r in self.results.values()) / 3
        self.assertNotAlmostEqual(rows[0]["p99_us"], mean_p99)
        self.assertEqual(intervals[NAME][0]["latency_count"], sum(len(s) for s in self.samples))

    def test_throughput_and_counts_are_summed(self):
        rows, _, _ = kd.merge(self.results, {})
        self.assertAlmostEqual(rows[0]["items_per_second"], 3000.0)
        self.assertEqual(rows[0]["delivered_records"], 9000.0)
        self.assertEqual(rows[0]["target_rate"], 3000.0)
        self.assertEqual(rows[0]["rate_shortfall"], 0.0)
        self.assertEqual(rows[0]["avg_batch_bytes"], 500.0)  # weighted mean, not a sum
        # Skewed by 10 ms each: the common window is shorter than 2 s but holds one interval.
        self.assertAlmostEqual(rows[0]["window_seconds"], 2.0 - 0.02, places=6)

    def test_every_counter_follows_its_merge_rule(self):
        # peak_rss_mb merges by "max": the largest agent's, not a records-weighted mean.
        self.assertEqual(facts.merge_rules()["peak_rss_mb"], "max")
        for a, (rss, rps) in enumerate(((100.0, 1000.0), (300.0, 1000.0), (200.0, 3000.0))):
            row = self.results["agent-%d" % a]["benchmarks"][0]
            row["peak_rss_mb"], row["items_per_second"] = rss, rps
        rows, _, _ = kd.merge(self.results, {})
        self.assertEqual(rows[0]["peak_rss_mb"], 300.0)

    def test_a_cluster_behind_the_merged_load_is_a_shortfall(self):
        # Every agent kept its schedule, but one's cluster delivered 900 of its 1000/s: the
        # merged 2900/s delivered is more than 1 % short of 3000 (FellShort).
        self.results["agent-2"] = agent_json(self.samples[2], 1000.02, 1000.0,
                                             delivered_rate=900.0)
        rows, _, _ = kd.merge(self.results, {})
        self.assertEqual(rows[0]["achieved_rate"], 3000.0)
        self.assertEqual(rows[0]["delivered_rate"], 2900.0)
        self.assertEqual(rows[0]["rate_shortfall"], 1.0)

    def test_a_failed_agent_fails_the_row_by_name_and_keeps_the_others(self):
        rows, _, errors = kd.merge({"agent-0": self.results["agent-0"]},
                                   {"agent-1": "the agent disappeared"})
        self.assertTrue(rows[0]["error_occurred"])
        self.assertIn("agent-1: the agent disappeared", rows[0]["error_message"])
        self.assertEqual(len(errors), 1)

    def test_a_row_failed_on_one_agent_fails_the_merged_row(self):
        self.results["agent-2"] = agent_json(self.samples[2], 1000.0, 1000.0, error="lost 3")
        rows, _, _ = kd.merge(self.results, {})
        self.assertIn("agent-2: lost 3", rows[0]["error_message"])

    def test_windows_that_do_not_overlap_fail(self):
        self.results["agent-2"] = agent_json(self.samples[2], 1005.0, 1000.0)
        rows, _, _ = kd.merge(self.results, {})
        self.assertIn("do not overlap", rows[0]["error_message"])


class WorkloadTest(unittest.TestCase):
    def workload(self, **kw):
        w = {"kbench": "/k", "bootstrap": "10.0.0.1:9092", "start_unix_ms": 1, "produce": "acks=1"}
        w.update(kw)
        return w

    def test_a_good_workload(self):
        self.assertEqual(kd.check_workload(self.workload(settings={"linger.ms": "5"})), [])

    def test_secrets_unknown_keys_and_missing_bootstrap_are_refused(self):
        self.assertIn("secret", kd.check_workload(self.workload(settings={"sasl.password": "x"}))[0])
        self.assertIn("unknown workload key", kd.check_workload(self.workload(nope=1))[0])
        self.assertIn("bootstrap", kd.check_workload(self.workload(bootstrap=""))[0])


class DistributedUsageTest(unittest.TestCase):
    def run_distributed(self, *args):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "cluster.json"), "w") as f:
            json.dump({"nodes": {"agent-0": {"hostname": "127.0.0.1", "trogdor.agent.port": 1}}}, f)
        with open(os.path.join(d, "coordinator"), "w") as f:
            f.write("http://127.0.0.1:1\n")
        return subprocess.run([os.path.join(ROOT, "scripts", "distributed"), "run", "--dir", d]
                              + list(args), capture_output=True, text=True, timeout=60)

    def test_refusals_exit_2_before_any_task(self):
        cases = [
            (["--agents", "1", "--produce", "acks=1"], "no bootstrap"),
            (["--agents", "2", "--produce", "acks=1", "--bootstrap", "h:1"], "only 1 agent"),
            (["--agents", "1", "--produce", "acks=1", "--bootstrap", "h:1", "-X",
              "sasl.password=hunter2"], "is a secret"),
        ]
        for args, message in cases:
            p = self.run_distributed(*args)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(message, p.stderr)
            self.assertNotIn("hunter2", p.stderr)


if __name__ == "__main__":
    unittest.main()
