// Codec family: what each compression codec costs and saves on a Kafka batch.
//
// Timed: compressing (or decompressing) one batch of records, i.e. the concatenated record
// values up to batch_bytes, with the codec framed as Kafka puts it on the wire and its
// context reused across batches as real clients do (`*_fresh` variants create a context
// per batch). Not timed: payload generation, context creation (except `*_fresh`),
// verification. Verified before timing: the batch round-trips byte for byte, or the
// benchmark fails with SkipWithError.
//
// Reference rows in the same run: `Codec/memcpy` (the ceiling, as lzbench shows it) and
// `Codec/direct_*`, which call each library directly with no kbench code in the loop, so
// the harness's own overhead is visible (they should match `compress`/`decompress`).

#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "fixtures/counters.h"
#include "fixtures/family.h"
#include "fixtures/runner.h"
#include "harness/codec.h"
#include "harness/payload.h"

namespace kbench::bench {
namespace {

// ------------------------------------------------------------------ parameters

// Codecs and levels: each codec row's bench_levels (harness/codec_table.cc).
constexpr std::array<std::string_view, 6> kPayloads = {
    "zeros", "random", "az", "value_bound:500", "value_bound:50000", "repeated"};
constexpr std::array<std::size_t, 3> kRecordBytes = {100, 1000, 10000};
constexpr std::array<std::size_t, 3> kBatchBytes = {16 * 1024, 64 * 1024, 1024 * 1024};

// The slice that also runs with a fresh context per batch, and with direct library calls:
// one payload that lz4 and snappy cannot compress (az) and one they can (value_bound:500).
constexpr std::array<std::string_view, 2> kSlicePayloads = {"az", "value_bound:500"};
constexpr std::size_t kSliceRecordBytes = 1000;
constexpr std::size_t kSliceBatchBytes = 64 * 1024;
// Direct rows: every codec row with a DirectCodec, at its direct_level.

// ------------------------------------------------------------------ data

struct CodecParams {
  CodecSpec codec;
  PayloadSpec payload;
  SizeSpec record_bytes;
  std::size_t batch_bytes;
  std::uint64_t seed;
};

// One batch's worth of record values, concatenated as a compressor sees them.
struct BatchData {
  explicit BatchData(const CodecParams& p) {
    RecordSet records =
        PayloadGenerator(p.payload, p.record_bytes, p.seed).GenerateUpTo(p.batch_bytes);
    record_count = static_cast<std::int64_t>(records.size());
    raw = records.ConcatenatedValues();
  }
  ByteBuffer raw;
  std::int64_t record_count = 0;
};

Status RoundTripError(Codec& codec, const ByteBuffer& raw, ByteBuffer& compressed) {
  ByteBuffer restored;
  if (Status s = codec.Compress(raw.view(), compressed); !s)
    return Status::Error("compress failed: " + s.message());
  if (Status s = codec.Decompress(compressed.view(), restored); !s) {
    return Status::Error("decompress failed: " + s.message());
  }
  if (restored.size() != raw.size() || std::memcmp(restored.data(), raw.data(), raw.size()) != 0) {
    return Status::Error("round trip mismatch: " + std::to_string(raw.size()) + " bytes in, " +
                         std::to_string(restored.size()) + " bytes out");
  }
  return Status::Ok();
}

// ------------------------------------------------------------------ work

class CompressWork {
 public:
  explicit CompressWork(const CodecParams& p) : data_(p), codec_(MakeCodec(p.codec)) {}
  Status Verify() { return RoundTripError(*codec_, data_.raw, out_); }
  void Iterate() {
    ok_ &= codec_->Compress(data_.raw.view(), out_).ok();
    benchmark::DoNotOptimize(out_.data());
    benchmark::ClobberMemory();
  }
  std::int64_t items_per_iteration() const { return data_.record_count; }
  std::int64_t bytes_per_iteration() const { return static_cast<std::int64_t>(data_.raw.size()); }
  void Report(benchmark::State& state) {
    if (!ok_) state.SkipWithError("compression failed inside the timed loop");
    state.counters[counters::kRatio] =
        counters::Value(static_cast<double>(out_.size()) / static_cast<double>(data_.raw.size()));
    state.counters[counters::kCompressedBytes] = counters::Value(static_cast<double>(out_.size()));
  }

 private:
  BatchData data_;
  std::unique_ptr<Codec> codec_;
  ByteBuffer out_;
  bool ok_ = true;
};

class DecompressWork {
 public:
  explicit DecompressWork(const CodecParams& p) : data_(p), codec_(MakeCodec(p.codec)) {}
  Status Verify() { return RoundTripError(*codec_, data_.raw, compressed_); }
  void Iterate() {
    ok_ &= codec_->Decompress(compressed_.view(), out_).ok();
    benchmark::DoNotOptimize(out_.data());
    benchmark::ClobberMemory();
  }
  std::int64_t items_per_iteration() const { return data_.record_count; }
  std::int64_t bytes_per_iteration() const { return static_cast<std::int64_t>(data_.raw.size()); }
  void Report(benchmark::State& state) {
    if (!ok_ || out_.size() != data_.raw.size()) {
      state.SkipWithError("decompression failed inside the timed loop");
    }
    state.counters[counters::kRatio] = counters::Value(static_cast<double>(compressed_.size()) /
                                                       static_cast<double>(data_.raw.size()));
    state.counters[counters::kCompressedBytes] =
        counters::Value(static_cast<double>(compressed_.size()));
  }

 private:
  BatchData data_;
  std::unique_ptr<Codec> codec_;
  ByteBuffer compressed_;
  ByteBuffer out_;
  bool ok_ = true;
};

class MemcpyWork {
 public:
  explicit MemcpyWork(const CodecParams& p) : data_(p) {
    out_.ResizeUninitialized(data_.raw.size());
  }
  Status Verify() {
    Iterate();
    if (std::memcmp(out_.data(), data_.raw.data(), data_.raw.size()) != 0)
      return Status::Error("memcpy mismatch");
    return Status::Ok();
  }
  void Iterate() {
    std::memcpy(out_.data(), data_.raw.data(), data_.raw.size());
    benchmark::DoNotOptimize(out_.data());
    benchmark::ClobberMemory();
  }
  std::int64_t items_per_iteration() const { return data_.record_count; }
  std::int64_t bytes_per_iteration() const { return static_cast<std::int64_t>(data_.raw.size()); }
  void Report(benchmark::State& state) { state.counters[counters::kRatio] = counters::Value(1.0); }

 private:
  BatchData data_;
  ByteBuffer out_;
};

// Direct library calls with preallocated buffers: what a hand-written bare loop would do.
// The calls are the codec's own (its DirectCodec, next to its library code in
// harness/codecs/), free of kbench's Codec layer; only the bytes come from the harness.
class DirectWork {
 public:
  DirectWork(const CodecParams& p, bool compress)
      : data_(p), compress_(compress), direct_(p.codec.info().make_direct(p.codec.level)) {
    std::unique_ptr<Codec> codec = MakeCodec(p.codec);  // for the reference compressed form
    if (!codec->Compress(data_.raw.view(), compressed_).ok()) compressed_.clear();
    out_.ResizeUninitialized(direct_->CompressBound(data_.raw.size()) + 64 * 1024);
  }

  Status Verify() {
    if (compressed_.empty()) return Status::Error("reference compression failed");
    std::size_t n = compress_ ? CompressOnce() : DecompressOnce();
    if (compress_) return n == 0 ? Status::Error("direct compression failed") : Status::Ok();
    if (n != data_.raw.size() || std::memcmp(out_.data(), data_.raw.data(), n) != 0) {
      return Status::Error("direct decompression does not round-trip");
    }
    return Status::Ok();
  }
  void Iterate() {
    std::size_t n = compress_ ? CompressOnce() : DecompressOnce();
    benchmark::DoNotOptimize(n);
    benchmark::ClobberMemory();
  }
  std::int64_t items_per_iteration() const { return data_.record_count; }
  std::int64_t bytes_per_iteration() const { return static_cast<std::int64_t>(data_.raw.size()); }
  void Report(benchmark::State& state) {
    state.counters[counters::kRatio] = counters::Value(static_cast<double>(compressed_.size()) /
                                                       static_cast<double>(data_.raw.size()));
  }

 private:
  std::size_t CompressOnce() {
    return direct_->Compress(data_.raw.view(), out_.data(), out_.capacity());
  }
  std::size_t DecompressOnce() {
    return direct_->Decompress(compressed_.view(), out_.data(), out_.capacity());
  }

  BatchData data_;
  bool compress_;
  std::unique_ptr<DirectCodec> direct_;
  ByteBuffer compressed_;
  ByteBuffer out_;
};

struct DirectCompressWork : DirectWork {
  explicit DirectCompressWork(const CodecParams& p) : DirectWork(p, true) {}
};
struct DirectDecompressWork : DirectWork {
  explicit DirectDecompressWork(const CodecParams& p) : DirectWork(p, false) {}
};

// ------------------------------------------------------------------ registration

BenchName Name(std::string_view variant, const CodecParams& p, bool with_codec = true) {
  BenchName name("Codec", variant);
  if (with_codec) name.Add("codec", p.codec.Name()).Add("level", p.codec.level);
  name.Add("payload", p.payload.Name())
      .Add("record_bytes", p.record_bytes.Name())
      .Add("batch_bytes", p.batch_bytes);
  return name;
}

std::vector<CodecSpec> DefaultCodecs() {
  std::vector<CodecSpec> specs;
  const auto table = CodecTable();
  for (std::size_t row = 0; row < table.size(); ++row) {
    for (int level : table[row].bench_levels) {
      CodecSpec spec;
      spec.row = static_cast<std::uint8_t>(row);
      spec.level = level;
      specs.push_back(spec);
    }
  }
  return specs;
}

std::vector<CodecSpec> DirectCodecs() {
  std::vector<CodecSpec> specs;
  const auto table = CodecTable();
  for (std::size_t row = 0; row < table.size(); ++row) {
    if (!table[row].make_direct) continue;
    CodecSpec spec;
    spec.row = static_cast<std::uint8_t>(row);
    spec.level = table[row].direct_level;
    specs.push_back(spec);
  }
  return specs;
}

template <typename T, std::size_t N, typename Parse>
auto FromDefaults(const std::array<T, N>& defaults, Parse parse) {
  std::vector<decltype(parse(defaults[0]))> out;
  out.reserve(N);
  for (const auto& d : defaults) out.push_back(parse(d));
  return out;
}

void RegisterCodecFamily(const Options& options, BenchSession& session) {
  std::vector<CodecSpec> codecs = options.codecs.empty() ? DefaultCodecs() : options.codecs;
  std::vector<PayloadSpec> payloads =
      options.payloads.empty() ? FromDefaults(kPayloads, ParsePayloadSpec) : options.payloads;
  std::vector<SizeSpec> sizes = options.record_sizes.empty() ? FromDefaults(kRecordBytes,
                                                                            [](std::size_t n) {
                                                                              return SizeSpec{n, n};
                                                                            })
                                                             : options.record_sizes;
  for (auto& codec : codecs) MakeCodec(codec);  // validates levels before anything runs

  for (const auto& payload : payloads) {
    for (const auto& size : sizes) {
      for (std::size_t batch : kBatchBytes) {
        CodecParams base{CodecSpec{}, payload, size, batch, options.payload_seed};
        RegisterWork<MemcpyWork>(session, Name("memcpy", base, false), base);
        for (const auto& codec : codecs) {
          CodecParams p = base;
          p.codec = codec;
          RegisterWork<CompressWork>(session, Name("compress", p), p);
          RegisterWork<DecompressWork>(session, Name("decompress", p), p);
        }
      }
    }
  }

  // Fresh-context and direct-call rows on a representative slice.
  for (auto slice_payload : kSlicePayloads) {
    CodecParams slice{CodecSpec{}, ParsePayloadSpec(slice_payload),
                      SizeSpec{kSliceRecordBytes, kSliceRecordBytes}, kSliceBatchBytes,
                      options.payload_seed};
    for (const auto& codec : codecs) {
      CodecParams p = slice;
      p.codec = codec;
      p.codec.reuse_context = false;
      RegisterWork<CompressWork>(session, Name("compress_fresh", p), p);
      RegisterWork<DecompressWork>(session, Name("decompress_fresh", p), p);
    }
    for (const auto& codec : DirectCodecs()) {
      CodecParams p = slice;
      p.codec = codec;
      RegisterWork<DirectCompressWork>(session, Name("direct_compress", p), p);
      RegisterWork<DirectDecompressWork>(session, Name("direct_decompress", p), p);
    }
  }
}

}  // namespace

KBENCH_REGISTER_FAMILY(Codec, RegisterCodecFamily, FamilyTarget::kNone);

}  // namespace kbench::bench
