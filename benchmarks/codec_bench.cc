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

#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

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

struct CodecLevel {
  std::string_view codec;
  int level;
};
constexpr std::array<CodecLevel, 12> kCodecLevels = {{
    {"gzip", 1},
    {"gzip", 6},
    {"gzip", 9},
    {"snappy", 0},
    {"snappy_xerial", 0},
    {"lz4", 1},
    {"lz4", 9},  // 1: fast (librdkafka's default), 9: HC (the Java client's default)
    {"zstd", -5},
    {"zstd", 1},
    {"zstd", 3},
    {"zstd", 9},
    {"zstd", 19},
}};
constexpr std::array<std::string_view, 6> kPayloads = {
    "zeros", "random", "az", "value_bound:500", "value_bound:50000", "repeated"};
constexpr std::array<std::size_t, 3> kRecordBytes = {100, 1000, 10000};
constexpr std::array<std::size_t, 3> kBatchBytes = {16 * 1024, 64 * 1024, 1024 * 1024};

// The slice that also runs with a fresh context per batch, and with direct library calls:
// one payload that lz4 and snappy cannot compress (az) and one they can (value_bound:500).
constexpr std::array<std::string_view, 2> kSlicePayloads = {"az", "value_bound:500"};
constexpr std::size_t kSliceRecordBytes = 1000;
constexpr std::size_t kSliceBatchBytes = 64 * 1024;
constexpr std::array<CodecLevel, 4> kDirectCodecs = {
    {{"gzip", 6}, {"snappy", 0}, {"lz4", 1}, {"zstd", 3}}};

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

std::string RoundTripError(Codec& codec, const ByteBuffer& raw, ByteBuffer& compressed) {
  ByteBuffer restored;
  if (Status s = codec.Compress(raw.view(), compressed); !s)
    return "compress failed: " + s.message();
  if (Status s = codec.Decompress(compressed.view(), restored); !s) {
    return "decompress failed: " + s.message();
  }
  if (restored.size() != raw.size() || std::memcmp(restored.data(), raw.data(), raw.size()) != 0) {
    return "round trip mismatch: " + std::to_string(raw.size()) + " bytes in, " +
           std::to_string(restored.size()) + " bytes out";
  }
  return "";
}

// ------------------------------------------------------------------ work

class CompressWork {
 public:
  explicit CompressWork(const CodecParams& p) : data_(p), codec_(MakeCodec(p.codec)) {}
  std::string Verify() { return RoundTripError(*codec_, data_.raw, out_); }
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
  std::string Verify() { return RoundTripError(*codec_, data_.raw, compressed_); }
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
  std::string Verify() {
    Iterate();
    return std::memcmp(out_.data(), data_.raw.data(), data_.raw.size()) == 0 ? ""
                                                                             : "memcpy mismatch";
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
// Kept deliberately free of kbench's Codec layer; only the bytes come from the harness.
class DirectWork {
 public:
  DirectWork(const CodecParams& p, bool compress) : p_(p), data_(p), compress_(compress) {
    std::unique_ptr<Codec> codec = MakeCodec(p.codec);  // for the reference compressed form
    if (!codec->Compress(data_.raw.view(), compressed_).ok()) compressed_.clear();
    out_.ResizeUninitialized(std::max<std::size_t>(ZSTD_compressBound(data_.raw.size()),
                                                   snappy::MaxCompressedLength(data_.raw.size())) +
                             64 * 1024);
    zcctx_ = ZSTD_createCCtx();
    zdctx_ = ZSTD_createDCtx();
    LZ4F_createCompressionContext(&lcctx_, LZ4F_VERSION);
    LZ4F_createDecompressionContext(&ldctx_, LZ4F_VERSION);
    deflateInit2(&deflate_, p.codec.level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    inflateInit2(&inflate_, 15 + 16);
    lz4_prefs_.frameInfo.blockSizeID = LZ4F_max64KB;
    lz4_prefs_.frameInfo.blockMode = LZ4F_blockIndependent;
    lz4_prefs_.compressionLevel = p.codec.level;
  }
  ~DirectWork() {
    ZSTD_freeCCtx(zcctx_);
    ZSTD_freeDCtx(zdctx_);
    LZ4F_freeCompressionContext(lcctx_);
    LZ4F_freeDecompressionContext(ldctx_);
    deflateEnd(&deflate_);
    inflateEnd(&inflate_);
  }
  DirectWork(const DirectWork&) = delete;
  DirectWork& operator=(const DirectWork&) = delete;

  std::string Verify() {
    if (compressed_.empty()) return "reference compression failed";
    std::size_t n = compress_ ? CompressOnce() : DecompressOnce();
    if (compress_) return n == 0 ? "direct compression failed" : "";
    if (n != data_.raw.size() || std::memcmp(out_.data(), data_.raw.data(), n) != 0) {
      return "direct decompression does not round-trip";
    }
    return "";
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
    const auto* src = data_.raw.data();
    std::size_t len = data_.raw.size();
    switch (p_.codec.id) {
      case CodecId::kZstd:
        return ZSTD_compressCCtx(zcctx_, out_.data(), out_.capacity(), src, len, p_.codec.level);
      case CodecId::kSnappy: {
        std::size_t n = 0;
        snappy::RawCompress(reinterpret_cast<const char*>(src), len,
                            reinterpret_cast<char*>(out_.data()), &n);
        return n;
      }
      case CodecId::kLz4: {
        std::size_t pos = LZ4F_compressBegin(lcctx_, out_.data(), out_.capacity(), &lz4_prefs_);
        pos += LZ4F_compressUpdate(lcctx_, out_.data() + pos, out_.capacity() - pos, src, len,
                                   nullptr);
        pos += LZ4F_compressEnd(lcctx_, out_.data() + pos, out_.capacity() - pos, nullptr);
        return pos;
      }
      case CodecId::kGzip: {
        deflateReset(&deflate_);
        deflate_.next_in = const_cast<Bytef*>(src);
        deflate_.avail_in = static_cast<uInt>(len);
        deflate_.next_out = out_.data();
        deflate_.avail_out = static_cast<uInt>(out_.capacity());
        return deflate(&deflate_, Z_FINISH) == Z_STREAM_END ? deflate_.total_out : 0;
      }
      case CodecId::kNone:
        break;
    }
    return 0;
  }
  std::size_t DecompressOnce() {
    const auto* src = compressed_.data();
    std::size_t len = compressed_.size();
    switch (p_.codec.id) {
      case CodecId::kZstd:
        return ZSTD_decompressDCtx(zdctx_, out_.data(), out_.capacity(), src, len);
      case CodecId::kSnappy:
        return snappy::RawUncompress(reinterpret_cast<const char*>(src), len,
                                     reinterpret_cast<char*>(out_.data()))
                   ? data_.raw.size()
                   : 0;
      case CodecId::kLz4: {
        LZ4F_resetDecompressionContext(ldctx_);
        std::size_t dst = out_.capacity();
        std::size_t consumed = len;
        LZ4F_decompress(ldctx_, out_.data(), &dst, src, &consumed, nullptr);
        return dst;
      }
      case CodecId::kGzip: {
        inflateReset(&inflate_);
        inflate_.next_in = const_cast<Bytef*>(src);
        inflate_.avail_in = static_cast<uInt>(len);
        inflate_.next_out = out_.data();
        inflate_.avail_out = static_cast<uInt>(out_.capacity());
        return inflate(&inflate_, Z_FINISH) == Z_STREAM_END ? inflate_.total_out : 0;
      }
      case CodecId::kNone:
        break;
    }
    return 0;
  }

  CodecParams p_;
  BatchData data_;
  bool compress_;
  ByteBuffer compressed_;
  ByteBuffer out_;
  ZSTD_CCtx* zcctx_ = nullptr;
  ZSTD_DCtx* zdctx_ = nullptr;
  LZ4F_cctx* lcctx_ = nullptr;
  LZ4F_dctx* ldctx_ = nullptr;
  LZ4F_preferences_t lz4_prefs_{};
  z_stream deflate_{};
  z_stream inflate_{};
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
  for (const auto& [codec, level] : kCodecLevels) {
    CodecSpec spec = ParseCodecSpec(codec);
    spec.level = level;
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
    for (const auto& [codec, level] : kDirectCodecs) {
      CodecParams p = slice;
      p.codec = ParseCodecSpec(codec);
      p.codec.level = level;
      RegisterWork<DirectCompressWork>(session, Name("direct_compress", p), p);
      RegisterWork<DirectDecompressWork>(session, Name("direct_decompress", p), p);
    }
  }
}

}  // namespace

KBENCH_REGISTER_FAMILY(Codec, RegisterCodecFamily);

}  // namespace kbench::bench
