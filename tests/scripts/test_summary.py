"""scripts/kbench/summary.py: the table shows each row's cost columns (client and broker
CPU per MiB) where the row has them, '-' where it does not, and lists failed rows."""

import contextlib
import io
import json
import os
import tempfile
import unittest

from kbench import summary

HERE = os.path.dirname(os.path.abspath(__file__))


def row(name, rep, **counters):
    return dict({"name": name, "run_name": name, "run_type": "iteration", "repetition_index": rep,
                 "items_per_second": 1000.0 * (rep + 1), "bytes_per_second": 1e6}, **counters)


class Summary(unittest.TestCase):
    def summarize(self, benchmarks):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"context": {"target": "live"}, "benchmarks": benchmarks}, f)
        self.addCleanup(os.unlink, f.name)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = summary.main(f.name)
        return rc, out.getvalue()

    def test_cost_columns_are_medians_and_dashes_where_missing(self):
        costed = "Produce/send/acks:1/real_time"
        plain = "Codec/compress/codec:lz4"
        rc, text = self.summarize([
            row(costed, 0, cpu_us_per_mb=2000.0, broker_cpu_us_per_mb=4000.0),
            row(costed, 1, cpu_us_per_mb=3000.0, broker_cpu_us_per_mb=5000.0),
            row(costed, 2, cpu_us_per_mb=9000.0, broker_cpu_us_per_mb=6000.0),
            row(plain, 0)])
        self.assertEqual(rc, 0)
        self.assertIn("CPU us/MiB", text)
        line = next(ln for ln in text.splitlines() if ln.startswith(costed))
        self.assertIn(" 3 k ", line)  # client: median of 2000, 3000, 9000
        self.assertIn(" 5 k ", line)  # broker
        other = next(ln for ln in text.splitlines() if ln.startswith(plain)).split()
        self.assertEqual(other.count("-"), 5)  # ratio, p99, CPU, broker, intervals

    def test_a_row_whose_cluster_fell_behind_is_named_with_both_rates(self):
        name = "EndToEnd/latency/acks:1/rate:10000/real_time"
        reps = [row(name, r, target_rate=10000.0, achieved_rate=10000.0,
                    delivered_rate=4000.0 + r, rate_shortfall=1.0) for r in range(3)]
        rc, text = self.summarize(reps)
        self.assertEqual(rc, 0)
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(name + ":"))
        self.assertIn("3 of 3 repetitions more than 1 % short", line)
        self.assertIn("delivered 4 k", line)
        self.assertIn("its latency is queueing", line)

    def test_failed_rows_are_listed(self):
        rc, text = self.summarize([dict(row("Produce/send/x", 0), error_occurred=True,
                                        error_message="3 of 10 records undelivered")])
        self.assertEqual(rc, 0)
        self.assertIn("1 benchmark run(s) FAILED", text)
        self.assertIn("3 of 10 records undelivered", text)


if __name__ == "__main__":
    unittest.main()
