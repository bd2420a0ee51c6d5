"""Plant a known slowdown into a *scratch* kbench clone (never the product).

Used only by tests/detector/run_detector_experiment.sh.

usage: plant_slowdown.py spin REPO FRACTION|env NAME...
       plant_slowdown.py send REPO FRACTION|env NAME...
       plant_slowdown.py instructions REPO FRACTION|env

spin          fixtures/runner.h: after each timed iteration of a benchmark named NAME,
              spin for FRACTION x that iteration's time on the clock the row is judged
              on: the thread's CPU clock for Codec rows (judged on CPU time), the steady
              clock for the others (Produce, timed in real time). Sizing a CPU-judged row's
              spin by wall time planted +51 % instead of +10 % at a load of 30-60, where
              an iteration's wall time is several times its CPU time. The planted shift
              is FRACTION by construction, not by calibration. The other rows pay two clock reads per
              iteration (tens of ns against iterations of tens of microseconds or more).
              `env` reads the fraction from $KBENCH_DETECTOR_SPIN at run time.
send          harness/producer.cc: the producing thread of a Produce row named NAME spins,
              every 64 records, for FRACTION x the steady-clock time those 64 records
              took: the send path itself gets slower, as a regression in the client would.
              (A spin in the benchmark thread between window intervals does not slow a
              windowed row by FRACTION: the producer threads keep sending meanwhile; it
              only takes a core.) `env` reads $KBENCH_DETECTOR_SPIN at run time.
instructions  benchmarks/codec_bench.cc: the zstd level 3 / az / 100-byte / 64 KiB
              compress row also hashes the first FRACTION of its batch, byte by byte,
              with a serial dependency (no vectorisation): a deterministic instruction
              count that grows linearly with FRACTION. `env` reads the fraction from
              $KBENCH_DETECTOR_FRACTION at run time (calibration).
"""
import os
import sys

from kbench.cli import die


def fraction_expr(text, var="KBENCH_DETECTOR_FRACTION"):
    if text == "env":
        return f'(std::getenv("{var}") ? std::atof(std::getenv("{var}")) : 0.0)'
    try:
        value = float(text)
    except ValueError:
        die(f"FRACTION must be a number or 'env', got '{text}'")
    if not 0.0 < value < 1.0:
        die(f"FRACTION must be in (0, 1), got {value}")
    return repr(value)


def edit(path, edits):
    try:
        src = open(path, encoding="utf-8").read()
    except OSError as e:
        die(f"cannot read {path}: {e}")
    for old, new in edits:
        if src.count(old) != 1:
            die(f"{path}: expected exactly one occurrence of {old.splitlines()[0]!r}; "
                "the file changed, update plant_slowdown.py")
        src = src.replace(old, new)
    open(path, "w", encoding="utf-8").write(src)


def plant_spin(repo, fraction, names):
    f = fraction_expr(fraction, "KBENCH_DETECTOR_SPIN")
    match = " || ".join("name == %s || name + \"/real_time\" == %s" % (cxx_string(n), cxx_string(n))
                        for n in names)
    edit(os.path.join(repo, "fixtures", "runner.h"), [
        ("#include <cstdint>\n", "#include <chrono>\n#include <cstdint>\n#include <ctime>\n"),
        ("void RunWork(benchmark::State& state, Work& work, const Status& verified, BenchSession& session,\n"
         "             const std::string& name) {",
         "void RunWork(benchmark::State& state, Work& work, const Status& verified, BenchSession& session,\n"
         "             const std::string& name) {\n"
         "  // Google Benchmark reports rows timed in real time with a /real_time suffix.\n"
         f"  const double detector_fraction = ({match}) ? {f} : 0.0;\n"
         "  // Codec rows are judged on CPU time, the others (Produce) on real time.\n"
         "  const bool detector_real_time = name.rfind(\"Codec/\", 0) != 0;\n"
         "  const auto detector_now = [detector_real_time]() -> double {\n"
         "    if (detector_real_time) {\n"
         "      return std::chrono::duration<double>(\n"
         "          std::chrono::steady_clock::now().time_since_epoch()).count();\n"
         "    }\n"
         "    timespec ts;\n"
         "    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);\n"
         "    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);\n"
         "  };"),
        ("  for (auto _ : state) {\n    work.Iterate();\n",
         "  // DETECTOR EXPERIMENT ONLY (tests/detector): a planted slowdown.\n"
         "  for (auto _ : state) {\n"
         "    const double t0 = detector_fraction > 0 ? detector_now() : 0.0;\n"
         "    work.Iterate();\n"
         "    if (detector_fraction > 0) {\n"
         "      const double end = t0 + (detector_now() - t0) * (1.0 + detector_fraction);\n"
         "      while (detector_now() < end) {\n"
         "      }\n"
         "    }\n"),
    ])


def plant_send(repo, fraction, names):
    f = fraction_expr(fraction, "KBENCH_DETECTOR_SPIN")
    # The driver knows its row by the progress label: the benchmark name without /real_time.
    labels = [n[: -len("/real_time")] if n.endswith("/real_time") else n for n in names]
    match = " || ".join("options_.progress_label == %s" % cxx_string(n) for n in labels)
    edit(os.path.join(repo, "harness", "producer.cc"), [
        ("#include <cstring>\n", "#include <cstdlib>\n#include <cstring>\n"),
        ("  std::uint64_t clock_ns = NowNs();\n  for (std::int64_t k = 0; k < mine; ++k) {\n",
         "  std::uint64_t clock_ns = NowNs();\n"
         "  // DETECTOR EXPERIMENT ONLY (tests/detector): a planted slowdown of the send path.\n"
         f"  const double detector_fraction = ({match}) ? {f} : 0.0;\n"
         "  std::uint64_t detector_mark = clock_ns;\n"
         "  for (std::int64_t k = 0; k < mine; ++k) {\n"),
        ("    if ((k & 63) == 63) {\n"
         "      // Delivery reports served by this poll are stamped with the time it began.\n"
         "      clock_ns = NowNs();\n",
         "    if ((k & 63) == 63) {\n"
         "      // Delivery reports served by this poll are stamped with the time it began.\n"
         "      clock_ns = NowNs();\n"
         "      if (detector_fraction > 0) {\n"
         "        const auto end = clock_ns + static_cast<std::uint64_t>(\n"
         "            static_cast<double>(clock_ns - detector_mark) * detector_fraction);\n"
         "        while (NowNs() < end) {\n"
         "        }\n"
         "        clock_ns = NowNs();\n"
         "        detector_mark = clock_ns;\n"
         "      }\n"),
    ])


def cxx_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def plant_instructions(repo, fraction):
    f = fraction_expr(fraction)
    helper = f"""// DETECTOR EXPERIMENT ONLY (tests/detector): a planted slowdown, never in the product.
std::size_t DetectorSlowBytes(const CodecParams& p, std::size_t size) {{
  if (p.codec.Name() != "zstd" || p.codec.level != 3 || !p.codec.reuse_context ||
      p.payload.Name() != "az" || p.record_bytes.Name() != "100" || p.batch_bytes != 65536) {{
    return 0;
  }}
  return static_cast<std::size_t>({f} * static_cast<double>(size));
}}

class CompressWork : public CodecWork {{"""
    edit(os.path.join(repo, "benchmarks", "codec_bench.cc"), [
        ("class CompressWork : public CodecWork {", helper),
        ("      : CodecWork(p), codec_(MakeCodec(p.codec)), state_(p.state), key_(CompressedSetKey(p)) {}\n"
         "  Status Verify() {\n"
         "    Status s = RoundTripError(",
         "      : CodecWork(p), codec_(MakeCodec(p.codec)), state_(p.state), key_(CompressedSetKey(p)),"
         " slow_bytes_(DetectorSlowBytes(p, data_.raw.empty() ? 0 : data_.raw[0].size())) {}\n"
         "  Status Verify() {\n"
         "    Status s = RoundTripError("),
        ("      ok_ &= codec_->Compress(data_.raw[b].view(), data_.out[b]).ok();\n",
         "      ok_ &= codec_->Compress(data_.raw[b].view(), data_.out[b]).ok();\n"
         "      std::uint32_t detector_hash = 0;\n"
         "      const auto* detector_bytes = data_.raw[b].view().data();\n"
         "      for (std::size_t i = 0; i < slow_bytes_ && i < data_.raw[b].size(); ++i) {\n"
         "        detector_hash = detector_hash * 31u + static_cast<std::uint8_t>(detector_bytes[i]);\n"
         "        benchmark::DoNotOptimize(detector_hash);\n"
         "      }\n"),
        ("  std::size_t compressed_ = 0;\n  bool ok_ = true;\n};\n\nclass DecompressWork",
         "  std::size_t compressed_ = 0;\n  bool ok_ = true;\n  std::size_t slow_bytes_;\n};\n\n"
         "class DecompressWork"),
        ("#include <cstring>\n", "#include <cstdlib>\n#include <cstring>\n"),
    ])


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(0 if args else 2)
    if args[0] == "spin" and len(args) >= 4:
        plant_spin(args[1], args[2], args[3:])
    elif args[0] == "send" and len(args) >= 4:
        plant_send(args[1], args[2], args[3:])
    elif args[0] == "instructions" and len(args) == 3:
        plant_instructions(args[1], args[2])
    else:
        die("bad arguments (see --help)")


if __name__ == "__main__":
    main()
