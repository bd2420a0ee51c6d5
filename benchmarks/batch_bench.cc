// Batch family: what building and reading a Kafka batch costs, per record format and codec.
//
// Timed, per iteration, over every batch of a working set of distinct batches
// (fixtures/batch_records.h: at least 64 batches and --working-set-bytes of values, 16 MiB by
// default; a file payload's whole file): `build` appends every record of a batch to a
// BatchBuilder and finishes it (compression, header or wrapper, CRC) with codec contexts and
// buffers reused, as a producer does; `read` decodes a batch and touches every record (CRC
// check, decompression, record parsing), as a consumer or a validating broker does.
// Reference rows on the uncompressed v2 batches of the same working set: `memcpy` copies
// their bytes (the ceiling for `build`); `crc32c` computes their CRC-32C with ISA-L, the
// fastest packaged implementation, without copying. `build` checksums with kbench's own fused
// copy+CRC kernel (harness/record/crc_copy*), not ISA-L's, so crc32c/memcpy is a comparison for
// build/memcpy (what the checksum alone costs with the packaged code), not a bound on it.
// Not timed: payload generation, turning it into record views, verification.
// Verified before timing: every built batch reads back to the same records (offsets,
// timestamps, keys, values), or the benchmark fails with SkipWithError.
//
// A batch holds whole records while their value bytes fit in batch_bytes (the same batches
// as the Codec family's). bytes_per_second counts value bytes (memcpy rows too, so the
// build/memcpy ratio reads off directly); `ratio` is the working set's wire size over the
// same batches written uncompressed.

#include <array>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "fixtures/batch_records.h"
#include "fixtures/counters.h"
#include "fixtures/family.h"
#include "fixtures/runner.h"
#include "harness/codec.h"
#include "harness/payload.h"
#include "harness/record/crc.h"
#include "harness/record/reader.h"
#include "harness/record/wire.h"
#include "harness/record/writer.h"

namespace kbench::bench {
namespace {

using record::BatchBuilder;
using record::BatchOptions;
using record::BatchReader;
using record::ReadResult;

// ------------------------------------------------------------------ parameters

constexpr std::array<int, 3> kMagics = {0, 1, 2};
// Codecs: every Kafka codec (KafkaCodecs(): one row per compression code of the table).
constexpr std::array<std::string_view, 2> kPayloads = {"az", "random"};
constexpr std::array<std::size_t, 2> kRecordBytes = {100, 1000};
constexpr std::array<std::size_t, 3> kBatchBytes = {16 * 1024, 64 * 1024, 1024 * 1024};
// The memcpy and crc32c reference rows: uncompressed v2 batches of this record size.
constexpr std::size_t kMemcpyRecordBytes = 1000;

// ------------------------------------------------------------------ data

// v0 has no timestamps; v1 and v2 must keep the records' own.
Status ReadBackError(const ByteBuffer& wire, std::span<const record::Record> records, int magic) {
  return bench::ReadBackError(wire, records, 0, magic != 0);
}

// Writes every batch of the working set into `wire` (one buffer per batch) and checks each
// reads back; `plain_bytes` gets the size of the same batches uncompressed (the denominator
// of `ratio`).
Status WriteChecked(BatchBuilder& builder, const BatchParams& p, const WorkingSet& data,
                    std::vector<ByteBuffer>& wire, std::size_t* plain_bytes) {
  BatchOptions plain = WriterOptions(p);
  plain.codec = CodecSpec{};
  wire.resize(data.batch_count());
  *plain_bytes = 0;
  for (std::size_t b = 0; b < data.batch_count(); ++b) {
    const std::string which = "batch " + std::to_string(b) + ": ";
    if (Status s = record::WriteBatch(builder, plain, data.batch(b), wire[b]); !s)
      return Status::Error(which + "build failed: " + s.message());
    *plain_bytes += wire[b].size();
    if (Status s = record::WriteBatch(builder, WriterOptions(p), data.batch(b), wire[b]); !s)
      return Status::Error(which + "build failed: " + s.message());
    if (Status s = ReadBackError(wire[b], data.batch(b), p.magic); !s)
      return Status::Error(which + s.message());
  }
  return Status::Ok();
}

std::size_t TotalSize(const std::vector<ByteBuffer>& buffers) {
  std::size_t n = 0;
  for (const auto& b : buffers) n += b.size();
  return n;
}

// records_per_batch (the mean over the working set), wire_bytes_per_record and ratio (wire
// over plain bytes), all over the whole working set.
void ReportBatch(benchmark::State& state, std::size_t wire, std::size_t plain,
                 const WorkingSet& data) {
  const auto records = static_cast<double>(data.record_count());
  state.counters[counters::kRecordsPerBatch] =
      counters::Value(records / static_cast<double>(data.batch_count()));
  state.counters[counters::kWireBytesPerRecord] =
      counters::Value(static_cast<double>(wire) / records);
  state.counters[counters::kRatio] =
      counters::Value(static_cast<double>(wire) / static_cast<double>(plain));
}

// ------------------------------------------------------------------ work

class BuildWork : public WorkingSetWork {
 public:
  explicit BuildWork(const BatchParams& p) : WorkingSetWork(p), p_(p), options_(WriterOptions(p)) {}
  Status Verify() { return WriteChecked(builder_, p_, data_, out_, &uncompressed_wire_); }
  void Iterate() {
    for (std::size_t b = 0; b < out_.size(); ++b)
      ok_ &= record::WriteBatch(builder_, options_, data_.batch(b), out_[b]).ok();
    benchmark::DoNotOptimize(out_.data());
    benchmark::ClobberMemory();
  }
  void Report(benchmark::State& state) {
    if (!ok_) state.SkipWithError("building failed inside the timed loop");
    ReportBatch(state, TotalSize(out_), uncompressed_wire_, data_);
  }

 private:
  BatchParams p_;
  BatchOptions options_;
  BatchBuilder builder_;
  std::vector<ByteBuffer> out_;
  std::size_t uncompressed_wire_ = 0;
  bool ok_ = true;
};

class ReadWork : public WorkingSetWork {
 public:
  explicit ReadWork(const BatchParams& p) : WorkingSetWork(p), p_(p) {}
  Status Verify() {
    BatchBuilder builder;
    return WriteChecked(builder, p_, data_, wire_, &uncompressed_wire_);
  }
  void Iterate() {
    std::size_t bytes = 0;
    for (const ByteBuffer& wire : wire_) {
      ok_ &= reader_.Read(wire.view(), result_).ok();
      // Touch every record as a consumer would hand it on.
      for (const auto& r : result_.records) bytes += r.value ? r.value->size() : 0;
    }
    benchmark::DoNotOptimize(bytes);
    value_bytes_ = bytes;
  }
  void Report(benchmark::State& state) {
    if (!ok_ || value_bytes_ != data_.total_value_bytes()) {
      state.SkipWithError("reading failed inside the timed loop");
    }
    ReportBatch(state, TotalSize(wire_), uncompressed_wire_, data_);
  }

 private:
  BatchParams p_;
  std::vector<ByteBuffer> wire_;
  BatchReader reader_;
  ReadResult result_;
  std::size_t uncompressed_wire_ = 0;
  std::size_t value_bytes_ = 0;
  bool ok_ = true;
};

// The reference rows work on the uncompressed v2 batches of the same working set, built once.
class ReferenceWork : public WorkingSetWork {
 public:
  void Report(benchmark::State& state) {
    ReportBatch(state, TotalSize(batches_), TotalSize(batches_), data_);
  }

 protected:
  explicit ReferenceWork(const BatchParams& p) : WorkingSetWork(p) {}
  Status BuildBatches() {
    BatchBuilder builder;
    batches_.resize(data_.batch_count());
    for (std::size_t b = 0; b < batches_.size(); ++b) {
      if (Status s = record::WriteBatch(builder, BatchOptions{}, data_.batch(b), batches_[b]); !s)
        return Status::Error("build failed: " + s.message());
    }
    return Status::Ok();
  }
  std::vector<ByteBuffer> batches_;
};

// Copies the batches' bytes: the speed `build` is held against (the goal: at least
// half of it).
class MemcpyWork : public ReferenceWork {
 public:
  explicit MemcpyWork(const BatchParams& p) : ReferenceWork(p) {}
  Status Verify() {
    if (Status s = BuildBatches(); !s) return s;
    out_.resize(batches_.size());
    for (std::size_t b = 0; b < batches_.size(); ++b)
      out_[b].ResizeUninitialized(batches_[b].size());
    Iterate();
    for (std::size_t b = 0; b < batches_.size(); ++b) {
      if (std::memcmp(out_[b].data(), batches_[b].data(), batches_[b].size()) != 0)
        return Status::Error("memcpy mismatch in batch " + std::to_string(b));
    }
    return Status::Ok();
  }
  void Iterate() {
    for (std::size_t b = 0; b < batches_.size(); ++b)
      std::memcpy(out_[b].data(), batches_[b].data(), batches_[b].size());
    benchmark::DoNotOptimize(out_.data());
    benchmark::ClobberMemory();
  }

 private:
  std::vector<ByteBuffer> out_;
};

// CRC-32C of each batch over what its CRC covers (attributes to the end): the floor under
// `build`'s time.
class Crc32cWork : public ReferenceWork {
 public:
  explicit Crc32cWork(const BatchParams& p) : ReferenceWork(p) {}
  Status Verify() {
    if (Status s = BuildBatches(); !s) return s;
    for (const ByteBuffer& batch : batches_) {
      if (Crc(batch) != record::wire::Get32(batch.data() + record::kV2Crc))
        return Status::Error("crc32c differs from the batch's stored CRC");
    }
    return Status::Ok();
  }
  void Iterate() {
    std::uint32_t crcs = 0;
    for (const ByteBuffer& batch : batches_) crcs ^= Crc(batch);
    benchmark::DoNotOptimize(crcs);
  }

 private:
  static std::uint32_t Crc(const ByteBuffer& batch) {
    return record::Crc32c(
        {batch.data() + record::kV2Attributes, batch.size() - record::kV2Attributes});
  }
};

// ------------------------------------------------------------------ registration

BenchName Name(std::string_view variant, const BatchParams& p, bool with_format = true) {
  BenchName name("Batch", variant);
  if (with_format) name.Add("magic", p.magic).Add("codec", p.codec.Name());
  name.Add("payload", p.payload.Name())
      .Add("record_bytes", p.record_bytes.Name())
      .Add("batch_bytes", p.batch_bytes);
  return name;
}

void RegisterBatchFamily(const Options& options, BenchSession& session) {
  std::vector<CodecSpec> codecs = options.codecs.empty() ? KafkaCodecs() : options.codecs;
  std::vector<PayloadSpec> payloads = options.payloads;
  if (payloads.empty()) {
    for (std::string_view p : kPayloads) payloads.push_back(ParsePayloadSpec(p));
  }
  std::vector<SizeSpec> sizes = options.record_sizes;
  if (sizes.empty()) {
    for (std::size_t n : kRecordBytes) sizes.push_back(SizeSpec{n, n});
  }
  for (auto& codec : codecs) MakeCodec(codec);  // validates levels before anything runs

  for (const auto& payload : payloads) {
    for (const auto& size : sizes) {
      for (std::size_t batch : kBatchBytes) {
        BatchParams base{
            2, CodecSpec{}, payload, size, batch, options.payload_seed, options.working_set};
        if (size.fixed() && size.min == kMemcpyRecordBytes) {
          RegisterWork<MemcpyWork>(session, Name("memcpy", base, false), base);
          RegisterWork<Crc32cWork>(session, Name("crc32c", base, false), base);
        }
        for (int magic : kMagics) {
          for (const auto& codec : codecs) {
            if (!KafkaCarries(codec, magic)) continue;  // e.g. zstd before v2
            BatchParams p = base;
            p.magic = magic;
            p.codec = codec;
            RegisterWork<BuildWork>(session, Name("build", p), p);
            RegisterWork<ReadWork>(session, Name("read", p), p);
          }
        }
      }
    }
  }
}

}  // namespace

// memcpy: the cost of touching the batches' bytes; crc32c: Kafka's checksum over them.
constexpr FamilyReference kBatchReferences[] = {{"memcpy", "", ""}, {"crc32c", "", ""}};
constexpr FamilyAbout kBatchAbout{
    "build a Kafka batch (v0/v1 message set or v2 record batch, compression, CRC) and "
    "read it back, per magic × codec × payload × record size × batch size; reference "
    "rows on the uncompressed v2 batch of the same records: `memcpy` (copying its "
    "bytes) and `crc32c` (ISA-L's CRC-32C over them, no copy)",
    "Batch/build/magic:2/codec:lz4/payload:az/record_bytes:100/batch_bytes:65536"};
KBENCH_REGISTER_FAMILY(Batch, RegisterBatchFamily, FamilyTarget::kNone, kBatchAbout, nullptr,
                       kBatchReferences);

}  // namespace kbench::bench
