"""The send path compresses what the Codec family compresses. On one payload, record size and
batch size, Produce/send's bytes per value byte on the wire (its compressed batches, from
librdkafka's statistics, on the in-process mock cluster) agree with the Codec family's ratio
over its working set for the same codec and level:

- 1000-byte records in batches of 1 MiB (batch.size, linger.ms long enough that size closes
  every batch): within 3 % for zstd 3, lz4 1 and gzip 1. The batch adds its record framing
  (about 1 % of the values before compression), so the send path is a little above;
- 100-byte records, zstd 9 (whose matcher finds a repeat a batch away): a set of records
  shorter than a batch would repeat inside every batch and zstd would compress the repeats.
  Framing (about 10 % of the values here) only adds bytes, so the send path is at least the
  Codec family's ratio (less 1 % for sampling) and above it by no more than the framing the
  uncompressed row shows.

Per row the ratio is avg_batch_bytes / (records_per_batch x record bytes): both windows of
the same batches, so the figure does not depend on where the measured window begins."""

import json
import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("KBENCH_BIN", os.path.join(ROOT, "build", "kbench"))

BATCH = 1048576
TOLERANCE = 0.03
# (payload, record bytes, codecs) compared; the codecs as kbench names them.
TIGHT = ("value_bound:500", 1000, ("zstd:3", "lz4:1", "gzip:1"))
SMALL = ("az", 100, ("zstd:9",))
SMALL_BELOW = 0.01  # how far below the Codec family's ratio sampling may put the send path


def run_kbench(args):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        path = out.name
    try:
        proc = subprocess.run([BIN, "--benchmark_min_time=0", "--benchmark_out=" + path,
                               "--benchmark_out_format=json", *args],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise AssertionError("kbench %s exited %d: %s" % (" ".join(args), proc.returncode,
                                                              proc.stderr[-2000:]))
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    finally:
        os.unlink(path)


def codec_label(name):
    """'codec:zstd/level:3' in a benchmark name as 'zstd:3' ('none' for codec:none)."""
    parts = dict(p.split(":", 1) for p in name.split("/") if ":" in p)
    return parts["codec"] + (":" + parts["level"] if "level" in parts else "")


def produce_spec(payload, record_bytes, codecs):
    # linger 1 s: a 1 MiB batch of 100-byte records still closes by size when a loaded
    # machine slows the producer to 10,000 records/s (at 200 ms some closed by time in CI).
    return ("--produce=acks=1,codec=%s,record_bytes=%d,payload=%s,batch_bytes=%d,linger_ms=1000"
            % ("|".join(codecs), record_bytes, payload, BATCH))


class SendPathMatchesCodecFamily(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(BIN, os.X_OK):
            raise AssertionError("%s is not built" % BIN)
        # message.max.bytes above the batch size, so that batch.size alone closes a batch
        # (librdkafka caps a batch at message.max.bytes, 1,000,000 by default).
        produce = run_kbench([
            "-X", "message.max.bytes=2000000", "--window-seconds=0.5", "--warmup-seconds=0.3",
            "--benchmark_filter=^Produce/send/", produce_spec(*TIGHT),
            produce_spec(SMALL[0], SMALL[1], ("none",) + SMALL[2])])
        cls.target = produce["context"].get("target")
        cls.send = {}
        for b in produce["benchmarks"]:
            if b.get("error_occurred"):
                raise AssertionError("%s failed: %s" % (b["name"], b.get("error_message")))
            record_bytes = int(dict(p.split(":", 1) for p in b["name"].split("/") if ":" in p)
                               ["record_bytes"])
            values = b["records_per_batch"] * record_bytes
            cls.send[(record_bytes, codec_label(b["name"]))] = (b["avg_batch_bytes"] / values, b)
        cls.codec = {}
        for payload, record_bytes, codecs in (TIGHT, SMALL):
            data = run_kbench([
                "--payload=" + payload, "--record-bytes=%d" % record_bytes,
                "--codec=" + ",".join(codecs),
                "--benchmark_filter=^Codec/compress/.*/batch_bytes:%d$" % BATCH])
            for b in data["benchmarks"]:
                cls.codec[(record_bytes, codec_label(b["name"]))] = b["ratio"]

    def test_runs_on_the_mock_with_full_batches(self):
        self.assertEqual(self.target, "mock")
        for (record_bytes, codec), (_, b) in self.send.items():
            with self.subTest(record_bytes=record_bytes, codec=codec):
                # Closed by size: the batch size less its framing (about 10 % at 100 bytes).
                self.assertGreater(b["records_per_batch"] * record_bytes, 0.8 * BATCH)

    def test_large_records_agree_within_tolerance(self):
        for codec in TIGHT[2]:
            send, _ = self.send[(TIGHT[1], codec)]
            ratio = self.codec[(TIGHT[1], codec)]
            with self.subTest(codec=codec):
                self.assertLess(abs(send / ratio - 1), TOLERANCE,
                                "send path %.4f, Codec family %.4f" % (send, ratio))

    def test_small_records_do_not_repeat_inside_a_batch(self):
        framing = self.send[(SMALL[1], "none")][0] - 1
        self.assertGreater(framing, 0)
        for codec in SMALL[2]:
            send, _ = self.send[(SMALL[1], codec)]
            ratio = self.codec[(SMALL[1], codec)]
            with self.subTest(codec=codec):
                self.assertGreater(send, ratio * (1 - SMALL_BELOW),
                                   "send path %.4f below the Codec family's %.4f: records "
                                   "repeat inside a batch" % (send, ratio))
                self.assertLess(send, (ratio + framing) * (1 + TOLERANCE),
                                "send path %.4f, Codec family %.4f + framing %.4f"
                                % (send, ratio, framing))


if __name__ == "__main__":
    unittest.main()
