// Codec family: what each compression codec costs and saves on Kafka batches.
//
// Timed: compressing (or decompressing) every batch of a working set of distinct batches
// (fixtures/batch_records.h: at least 64 batches and --working-set-bytes of values, 16 MiB by
// default; a file payload's whole file), each batch the concatenated record values up to
// batch_bytes, with the codec framed as Kafka puts it on the wire and its context reused
// across batches as real clients do (`*_fresh` variants create a context per batch). One
// iteration is one pass over the working set; items and bytes count all of it, and `ratio`
// and `compressed_bytes` are over all of it. `*_hot` variants time one batch over and over,
// as caches and branch predictors learn it: the gap to the plain row is what a benchmark of
// one repeated block overstates. Not timed: payload generation, context creation (except
// `*_fresh`), verification. Verified before timing: every batch round-trips byte for byte,
// or the benchmark fails with SkipWithError (a decompress row takes the batches that the
// compress row of its combination, which runs just before it, compressed and verified, and
// checks that its own codec restores each one: the pair compresses its working set once).
//
// Reference rows in the same run, on the same working set: `Codec/memcpy` (the ceiling, as
// lzbench shows it) and `Codec/direct_*`, which call each library directly with no kbench
// code in the loop, so the harness's own overhead is visible (they should match
// `compress`/`decompress`); their ratio and compressed_bytes are of their own output.

#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "fixtures/batch_records.h"
#include "fixtures/counters.h"
#include "fixtures/family.h"
#include "fixtures/run_state.h"
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

// The slice that also runs with a fresh context per batch, hot, and with direct library
// calls: one payload that lz4 and snappy cannot compress (az) and one they can
// (value_bound:500); --payload replaces these two as it does the main matrix's.
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
  WorkingSetSpec working_set;
  RunState* state = nullptr;  // the compressed-set hand-off; null: each row compresses its own
};

// The working set's batches, each its record values concatenated as a compressor sees them,
// and a buffer per batch for what the timed loop writes (each batch's output lands in its own
// memory, as `zstd -b` writes each block's).
struct CodecData {
  explicit CodecData(const CodecParams& p) {
    WorkingSet set(p.payload, p.record_bytes, p.batch_bytes, p.seed, p.working_set);
    record_count = static_cast<std::int64_t>(set.record_count());
    raw_bytes = set.total_value_bytes();
    raw.reserve(set.batch_count());
    for (std::size_t b = 0; b < set.batch_count(); ++b) raw.push_back(set.ConcatenatedValues(b));
    out.resize(raw.size());
  }
  std::vector<ByteBuffer> raw;
  std::vector<ByteBuffer> out;
  std::int64_t record_count = 0;
  std::size_t raw_bytes = 0;
};

// Checks that each batch of `compressed` decompresses to its batch of `raw`.
Status DecompressesError(Codec& codec, const std::vector<ByteBuffer>& raw,
                         const std::vector<ByteBuffer>& compressed) {
  if (compressed.size() != raw.size()) {
    return Status::Error(std::to_string(compressed.size()) + " compressed batches for " +
                         std::to_string(raw.size()) + " batches");
  }
  ByteBuffer restored;
  for (std::size_t b = 0; b < raw.size(); ++b) {
    const std::string which = "batch " + std::to_string(b) + ": ";
    if (Status s = codec.Decompress(compressed[b].view(), restored); !s)
      return Status::Error(which + "decompress failed: " + s.message());
    if (restored.size() != raw[b].size() ||
        std::memcmp(restored.data(), raw[b].data(), raw[b].size()) != 0) {
      return Status::Error(which + "round trip mismatch: " + std::to_string(raw[b].size()) +
                           " bytes in, " + std::to_string(restored.size()) + " bytes out");
    }
  }
  return Status::Ok();
}

// Compresses every batch into `compressed` (one buffer per batch) and checks that each
// decompresses to its input.
Status RoundTripError(Codec& codec, const std::vector<ByteBuffer>& raw,
                      std::vector<ByteBuffer>& compressed) {
  compressed.resize(raw.size());
  for (std::size_t b = 0; b < raw.size(); ++b) {
    if (Status s = codec.Compress(raw[b].view(), compressed[b]); !s)
      return Status::Error("batch " + std::to_string(b) + ": compress failed: " + s.message());
  }
  return DecompressesError(codec, raw, compressed);
}

BenchName Name(std::string_view variant, const CodecParams& p, bool with_codec = true) {
  BenchName name("Codec", variant);
  if (with_codec) name.Add("codec", p.codec.Name()).Add("level", p.codec.level);
  name.Add("payload", p.payload.Name())
      .Add("record_bytes", p.record_bytes.Name())
      .Add("batch_bytes", p.batch_bytes);
  return name;
}

// What decides a working set's compressed bytes beyond its row name's parts (the compress
// and decompress rows of one combination share them through RunState::OfferCompressed).
std::string CompressedSetKey(const CodecParams& p) {
  return Name("set", p).str() + (p.codec.reuse_context ? "/reuse" : "/fresh") +
         "/seed:" + std::to_string(p.seed) +
         "/working_set:" + std::to_string(p.working_set.min_batches) + "," +
         std::to_string(p.working_set.min_bytes);
}

std::size_t TotalSize(const std::vector<ByteBuffer>& buffers) {
  std::size_t n = 0;
  for (const auto& b : buffers) n += b.size();
  return n;
}

// ratio (compressed over raw) and compressed_bytes, over the whole working set.
void ReportCompressed(benchmark::State& state, std::size_t compressed, std::size_t raw) {
  state.counters[counters::kRatio] =
      counters::Value(static_cast<double>(compressed) / static_cast<double>(raw));
  state.counters[counters::kCompressedBytes] = counters::Value(static_cast<double>(compressed));
}

// What every Codec work counts per iteration: every batch of the working set.
class CodecWork {
 public:
  std::int64_t items_per_iteration() const { return data_.record_count; }
  std::int64_t bytes_per_iteration() const { return static_cast<std::int64_t>(data_.raw_bytes); }

 protected:
  explicit CodecWork(const CodecParams& p) : data_(p) {}
  CodecData data_;
};

// ------------------------------------------------------------------ work

class CompressWork : public CodecWork {
 public:
  explicit CompressWork(const CodecParams& p)
      : CodecWork(p), codec_(MakeCodec(p.codec)), state_(p.state), key_(CompressedSetKey(p)) {}
  Status Verify() {
    Status s = RoundTripError(*codec_, data_.raw, data_.out);
    // A copy: the timed loop rewrites data_.out.
    if (s && state_) state_->OfferCompressed(key_, data_.out);
    return s;
  }
  void Iterate() {
    std::size_t compressed = 0;
    for (std::size_t b = 0; b < data_.raw.size(); ++b) {
      ok_ &= codec_->Compress(data_.raw[b].view(), data_.out[b]).ok();
      compressed += data_.out[b].size();
    }
    compressed_ = compressed;
    benchmark::DoNotOptimize(data_.out.data());
    benchmark::ClobberMemory();
  }
  void Report(benchmark::State& state) {
    if (!ok_) state.SkipWithError("compression failed inside the timed loop");
    ReportCompressed(state, compressed_, data_.raw_bytes);
  }

 private:
  std::unique_ptr<Codec> codec_;
  RunState* state_;
  std::string key_;
  std::size_t compressed_ = 0;
  bool ok_ = true;
};

class DecompressWork : public CodecWork {
 public:
  explicit DecompressWork(const CodecParams& p)
      : CodecWork(p), codec_(MakeCodec(p.codec)), state_(p.state), key_(CompressedSetKey(p)) {}
  // The compress row just before this one offers its verified batches (the same codec,
  // level and working set): this row then only checks that its own codec restores each
  // one, instead of compressing the working set again.
  Status Verify() {
    if (state_) {
      if (auto offered = state_->TakeCompressed(key_)) {
        compressed_ = std::move(*offered);
        return DecompressesError(*codec_, data_.raw, compressed_);
      }
    }
    return RoundTripError(*codec_, data_.raw, compressed_);
  }
  void Iterate() {
    std::size_t restored = 0;
    for (std::size_t b = 0; b < compressed_.size(); ++b) {
      ok_ &= codec_->Decompress(compressed_[b].view(), data_.out[b]).ok();
      restored += data_.out[b].size();
    }
    restored_ = restored;
    benchmark::DoNotOptimize(data_.out.data());
    benchmark::ClobberMemory();
  }
  void Report(benchmark::State& state) {
    if (!ok_ || restored_ != data_.raw_bytes) {
      state.SkipWithError("decompression failed inside the timed loop");
    }
    ReportCompressed(state, TotalSize(compressed_), data_.raw_bytes);
  }

 private:
  std::unique_ptr<Codec> codec_;
  RunState* state_;
  std::string key_;
  std::vector<ByteBuffer> compressed_;
  std::size_t restored_ = 0;
  bool ok_ = true;
};

class MemcpyWork : public CodecWork {
 public:
  explicit MemcpyWork(const CodecParams& p) : CodecWork(p) {
    for (std::size_t b = 0; b < data_.raw.size(); ++b)
      data_.out[b].ResizeUninitialized(data_.raw[b].size());
  }
  Status Verify() {
    Iterate();
    for (std::size_t b = 0; b < data_.raw.size(); ++b) {
      if (std::memcmp(data_.out[b].data(), data_.raw[b].data(), data_.raw[b].size()) != 0)
        return Status::Error("memcpy mismatch in batch " + std::to_string(b));
    }
    return Status::Ok();
  }
  void Iterate() {
    for (std::size_t b = 0; b < data_.raw.size(); ++b)
      std::memcpy(data_.out[b].data(), data_.raw[b].data(), data_.raw[b].size());
    benchmark::DoNotOptimize(data_.out.data());
    benchmark::ClobberMemory();
  }
  void Report(benchmark::State& state) { state.counters[counters::kRatio] = counters::Value(1.0); }
};

// Direct library calls with preallocated buffers: what a hand-written bare loop would do.
// The calls are the codec's own (its DirectCodec, next to its library code in
// harness/codecs/), free of kbench's Codec layer; only the bytes come from the harness.
// They walk the same working set into the same per-batch buffers as compress/decompress.
// Everything they report is of their own output: decompress rows read the library's own
// compressed form, and ratio and compressed_bytes are the library calls' sizes.
class DirectWork : public CodecWork {
 public:
  DirectWork(const CodecParams& p, bool compress)
      : CodecWork(p), compress_(compress), direct_(p.codec.info().make_direct(p.codec.level)) {
    for (std::size_t b = 0; b < data_.raw.size(); ++b) {
      data_.out[b].ResizeUninitialized(direct_->CompressBound(data_.raw[b].size()) + 64 * 1024);
    }
  }

  // Every batch compressed by the library (the decompress rows' input), and back to its
  // input byte for byte through the library's own decompression.
  Status Verify() {
    own_.resize(data_.raw.size());
    for (std::size_t b = 0; b < data_.raw.size(); ++b) {
      const std::string which = "direct call, batch " + std::to_string(b) + ": ";
      const std::size_t n = CompressOnce(b);
      if (n == 0 || n > data_.out[b].capacity()) return Status::Error(which + "compress failed");
      own_[b].Assign(ByteView(data_.out[b].data(), n));
      const std::size_t restored = DecompressOnce(b);
      if (restored != data_.raw[b].size() ||
          std::memcmp(data_.out[b].data(), data_.raw[b].data(), restored) != 0) {
        return Status::Error(which + "decompression does not round-trip");
      }
    }
    own_bytes_ = TotalSize(own_);
    return Status::Ok();
  }
  void Iterate() {
    std::size_t total = 0;
    for (std::size_t b = 0; b < data_.raw.size(); ++b)
      total += compress_ ? CompressOnce(b) : DecompressOnce(b);
    // Compress rows: the bytes written this pass; decompress rows: the bytes restored.
    (compress_ ? compressed_ : restored_) = total;
    benchmark::DoNotOptimize(total);
    benchmark::ClobberMemory();
  }
  void Report(benchmark::State& state) {
    const bool ok = compress_ ? compressed_ == own_bytes_ : restored_ == data_.raw_bytes;
    if (!ok) state.SkipWithError("direct call's output changed inside the timed loop");
    ReportCompressed(state, own_bytes_, data_.raw_bytes);
  }

 private:
  std::size_t CompressOnce(std::size_t b) {
    return direct_->Compress(data_.raw[b].view(), data_.out[b].data(), data_.out[b].capacity());
  }
  std::size_t DecompressOnce(std::size_t b) {
    return direct_->Decompress(own_[b].view(), data_.out[b].data(), data_.out[b].capacity());
  }

  bool compress_;
  std::unique_ptr<DirectCodec> direct_;
  std::vector<ByteBuffer> own_;  // the library's compressed form of every batch
  std::size_t own_bytes_ = 0;
  std::size_t compressed_ = 0, restored_ = 0;
};

struct DirectCompressWork : DirectWork {
  explicit DirectCompressWork(const CodecParams& p) : DirectWork(p, true) {}
};
struct DirectDecompressWork : DirectWork {
  explicit DirectDecompressWork(const CodecParams& p) : DirectWork(p, false) {}
};

// ------------------------------------------------------------------ registration

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
        CodecParams base{
            CodecSpec{},         payload, size, batch, options.payload_seed, options.working_set,
            &session.run_state()};
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

  // Fresh-context, hot and direct-call rows on a representative slice: the defaults' two
  // payloads, or the user's (--payload=file:F then has its direct references).
  std::vector<PayloadSpec> slice_payloads =
      options.payloads.empty() ? FromDefaults(kSlicePayloads, ParsePayloadSpec) : options.payloads;
  for (const auto& slice_payload : slice_payloads) {
    CodecParams slice{
        CodecSpec{},         slice_payload,        SizeSpec{kSliceRecordBytes, kSliceRecordBytes},
        kSliceBatchBytes,    options.payload_seed, options.working_set,
        &session.run_state()};
    for (const auto& codec : codecs) {
      CodecParams p = slice;
      p.codec = codec;
      p.codec.reuse_context = false;
      RegisterWork<CompressWork>(session, Name("compress_fresh", p), p);
      RegisterWork<DecompressWork>(session, Name("decompress_fresh", p), p);
      p.codec.reuse_context = true;
      p.working_set = kHotBatch;
      RegisterWork<CompressWork>(session, Name("compress_hot", p), p);
      RegisterWork<DecompressWork>(session, Name("decompress_hot", p), p);
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

// memcpy: the cost of touching the bytes; direct_*: the library called directly, what
// kbench's codec adapter costs on top of it.
constexpr FamilyReference kCodecReferences[] = {
    {"memcpy", "", ""},
    {"direct_compress", "compress", "kbench / direct"},
    {"direct_decompress", "decompress", "kbench / direct"}};
constexpr FamilyAbout kCodecAbout{
    "compress / decompress a working set of distinct batches of record values (at "
    "least 64 batches and 16 MiB, or a whole file) per codec × level × payload × "
    "record size × batch size, contexts reused (`*_fresh`: a new context per batch); "
    "`memcpy` and `direct_*` (bare library calls, no kbench code in the loop) "
    "reference rows in the same run",
    "Codec/compress/codec:zstd/level:3/payload:az/record_bytes:100/batch_bytes:65536"};
KBENCH_REGISTER_FAMILY(Codec, RegisterCodecFamily, FamilyTarget::kNone, kCodecAbout, nullptr,
                       kCodecReferences);

}  // namespace kbench::bench
