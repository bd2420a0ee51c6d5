#!/usr/bin/python3
"""Plant a calibrated slowdown into benchmarks/codec_bench.cc of a *scratch* kbench clone.

Used only by tests/detector/run_detector_experiment.sh; never apply it to the product.

The slowed benchmark is one Codec/compress row (zstd level 3, az, 100-byte records,
64 KiB batch). Its CompressWork::Iterate compresses the first FRACTION of the batch a
second time into a separate buffer (kept alive with DoNotOptimize), so the extra cost is
the same kind of work as the measured one and scales with FRACTION. Every other
benchmark is untouched (slow_bytes_ == 0 skips the extra call).

usage: plant_slowdown.py CODEC_BENCH_CC FRACTION|env
  FRACTION  a number in (0, 1): compiled in as a constant (the slow5/slow10 commits)
  env       read the fraction from $KBENCH_DETECTOR_FRACTION at run time (calibration)
"""
import re
import sys


def die(msg):
    print(f"plant_slowdown.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    path, fraction = sys.argv[1], sys.argv[2]
    if fraction == "env":
        expr = ('std::getenv("KBENCH_DETECTOR_FRACTION") ? '
                'std::atof(std::getenv("KBENCH_DETECTOR_FRACTION")) : 0.0')
    else:
        try:
            value = float(fraction)
        except ValueError:
            die(f"FRACTION must be a number or 'env', got '{fraction}'")
        if not 0.0 < value < 1.0:
            die(f"FRACTION must be in (0, 1), got {value}")
        expr = repr(value)
    try:
        src = open(path, encoding="utf-8").read()
    except OSError as e:
        die(f"cannot read {path}: {e}")

    helper = f"""// DETECTOR EXPERIMENT ONLY (tests/detector): a planted slowdown, never in the product.
std::size_t DetectorSlowBytes(const CodecParams& p, std::size_t size) {{
  if (p.codec.Name() != "zstd" || p.codec.level != 3 || !p.codec.reuse_context ||
      p.payload.Name() != "az" || p.record_bytes.Name() != "100" || p.batch_bytes != 65536) {{
    return 0;
  }}
  const double fraction = {expr};
  return static_cast<std::size_t>(fraction * static_cast<double>(size));
}}

class CompressWork {{"""
    edits = [
        ("class CompressWork {", helper),
        ("explicit CompressWork(const CodecParams& p) : data_(p), codec_(MakeCodec(p.codec)) {}",
         "explicit CompressWork(const CodecParams& p)\n"
         "      : data_(p), codec_(MakeCodec(p.codec)), slow_bytes_(DetectorSlowBytes(p, data_.raw.size())) {}"),
        ("    ok_ &= codec_->Compress(data_.raw.view(), out_).ok();\n",
         "    ok_ &= codec_->Compress(data_.raw.view(), out_).ok();\n"
         "    if (slow_bytes_ != 0) {\n"
         "      ok_ &= codec_->Compress(data_.raw.view().first(slow_bytes_), slow_out_).ok();\n"
         "      benchmark::DoNotOptimize(slow_out_.data());\n"
         "    }\n"),
        ("  ByteBuffer out_;\n  bool ok_ = true;\n};\n\nclass DecompressWork",
         "  ByteBuffer out_;\n  bool ok_ = true;\n  std::size_t slow_bytes_;\n"
         "  ByteBuffer slow_out_;\n};\n\nclass DecompressWork"),
        ("#include <cstring>\n", "#include <cstdlib>\n#include <cstring>\n"),
    ]
    for old, new in edits:
        if src.count(old) != 1:
            die(f"{path}: expected exactly one occurrence of {old.splitlines()[0]!r}; "
                "codec_bench.cc changed, update plant_slowdown.py")
        src = src.replace(old, new)
    open(path, "w", encoding="utf-8").write(src)


if __name__ == "__main__":
    main()
