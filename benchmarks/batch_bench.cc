// Batch family: what building and reading a Kafka batch costs, per record format and codec.
//
// Timed: `build` appends every record of one batch to a BatchBuilder and finishes it
// (compression, header or wrapper, CRC) with codec contexts and buffers reused, as a
// producer does; `read` decodes the batch and touches every record (CRC check,
// decompression, record parsing), as a consumer or a validating broker does. Reference
// rows on the uncompressed v2 batch of the same records: `memcpy` copies its bytes (the
// ceiling for `build`); `crc32c` computes its CRC-32C with ISA-L, the fastest packaged
// implementation, without copying. `build` checksums with kbench's own fused copy+CRC
// kernel (harness/record/crc_copy*), not ISA-L's, so crc32c/memcpy is a comparison for
// build/memcpy (what the checksum alone costs with the packaged code), not a bound on it.
// Not timed: payload generation, turning it into record views, verification.
// Verified before timing: the built batch reads back to the same records (offsets,
// timestamps, keys, values), or the benchmark fails with SkipWithError.
//
// A batch holds whole records while their value bytes fit in batch_bytes (the same records
// as the Codec family's batch). bytes_per_second counts value bytes (memcpy rows too, so
// the build/memcpy ratio reads off directly); `ratio` is the batch's wire size over the
// same batch written uncompressed.

#include <array>
#include <cstring>
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
Status ReadBackError(const ByteBuffer& wire, const BatchRecords& data, int magic) {
  return bench::ReadBackError(wire, data, 0, magic != 0);
}

// Writes the batch `p` describes into `wire` and checks it reads back; `plain_bytes` gets
// the size of the same batch uncompressed (the denominator of `ratio`).
Status WriteChecked(BatchBuilder& builder, const BatchParams& p, const BatchRecords& data,
                    ByteBuffer& wire, std::size_t* plain_bytes) {
  BatchOptions options = WriterOptions(p);
  options.codec = CodecSpec{};
  if (Status s = record::WriteBatch(builder, options, data.records, wire); !s)
    return Status::Error("build failed: " + s.message());
  *plain_bytes = wire.size();
  if (Status s = record::WriteBatch(builder, WriterOptions(p), data.records, wire); !s)
    return Status::Error("build failed: " + s.message());
  return ReadBackError(wire, data, p.magic);
}

// records_per_batch, wire_bytes_per_record and ratio (wire over plain bytes).
void ReportBatch(benchmark::State& state, std::size_t wire, std::size_t plain, std::size_t n) {
  state.counters[counters::kRecordsPerBatch] = counters::Value(static_cast<double>(n));
  state.counters[counters::kWireBytesPerRecord] =
      counters::Value(static_cast<double>(wire) / static_cast<double>(n));
  state.counters[counters::kRatio] =
      counters::Value(static_cast<double>(wire) / static_cast<double>(plain));
}

// ------------------------------------------------------------------ work

class BuildWork : public BatchRecordsWork {
 public:
  explicit BuildWork(const BatchParams& p)
      : BatchRecordsWork(p), p_(p), options_(WriterOptions(p)) {}
  Status Verify() { return WriteChecked(builder_, p_, data_, out_, &uncompressed_wire_); }
  void Iterate() {
    ok_ &= record::WriteBatch(builder_, options_, data_.records, out_).ok();
    benchmark::DoNotOptimize(out_.data());
    benchmark::ClobberMemory();
  }
  void Report(benchmark::State& state) {
    if (!ok_) state.SkipWithError("building failed inside the timed loop");
    ReportBatch(state, out_.size(), uncompressed_wire_, data_.records.size());
  }

 private:
  BatchParams p_;
  BatchOptions options_;
  BatchBuilder builder_;
  ByteBuffer out_;
  std::size_t uncompressed_wire_ = 0;
  bool ok_ = true;
};

class ReadWork : public BatchRecordsWork {
 public:
  explicit ReadWork(const BatchParams& p) : BatchRecordsWork(p), p_(p) {}
  Status Verify() {
    BatchBuilder builder;
    return WriteChecked(builder, p_, data_, wire_, &uncompressed_wire_);
  }
  void Iterate() {
    ok_ &= reader_.Read(wire_.view(), result_).ok();
    // Touch every record as a consumer would hand it on.
    std::size_t bytes = 0;
    for (const auto& r : result_.records) bytes += r.value ? r.value->size() : 0;
    benchmark::DoNotOptimize(bytes);
    value_bytes_ = bytes;
  }
  void Report(benchmark::State& state) {
    if (!ok_ || value_bytes_ != data_.set.total_value_bytes()) {
      state.SkipWithError("reading failed inside the timed loop");
    }
    ReportBatch(state, wire_.size(), uncompressed_wire_, data_.records.size());
  }

 private:
  BatchParams p_;
  ByteBuffer wire_;
  BatchReader reader_;
  ReadResult result_;
  std::size_t uncompressed_wire_ = 0;
  std::size_t value_bytes_ = 0;
  bool ok_ = true;
};

// The reference rows work on the uncompressed v2 batch of the same records, built once.
class ReferenceWork : public BatchRecordsWork {
 public:
  void Report(benchmark::State& state) {
    ReportBatch(state, batch_.size(), batch_.size(), data_.records.size());
  }

 protected:
  explicit ReferenceWork(const BatchParams& p) : BatchRecordsWork(p) {}
  Status BuildBatch() {
    BatchBuilder builder;
    Status s = record::WriteBatch(builder, BatchOptions{}, data_.records, batch_);
    return s ? s : Status::Error("build failed: " + s.message());
  }
  ByteBuffer batch_;
};

// Copies the batch's bytes: the speed `build` is held against (the goal: at least
// half of it).
class MemcpyWork : public ReferenceWork {
 public:
  explicit MemcpyWork(const BatchParams& p) : ReferenceWork(p) {}
  Status Verify() {
    if (Status s = BuildBatch(); !s) return s;
    out_.ResizeUninitialized(batch_.size());
    Iterate();
    if (std::memcmp(out_.data(), batch_.data(), batch_.size()) != 0)
      return Status::Error("memcpy mismatch");
    return Status::Ok();
  }
  void Iterate() {
    std::memcpy(out_.data(), batch_.data(), batch_.size());
    benchmark::DoNotOptimize(out_.data());
    benchmark::ClobberMemory();
  }

 private:
  ByteBuffer out_;
};

// CRC-32C of the batch over what its CRC covers (attributes to the end): the floor under
// `build`'s time.
class Crc32cWork : public ReferenceWork {
 public:
  explicit Crc32cWork(const BatchParams& p) : ReferenceWork(p) {}
  Status Verify() {
    if (Status s = BuildBatch(); !s) return s;
    Iterate();
    if (crc_ != record::wire::Get32(batch_.data() + record::kV2Crc))
      return Status::Error("crc32c differs from the batch's stored CRC");
    return Status::Ok();
  }
  void Iterate() {
    crc_ = record::Crc32c(
        {batch_.data() + record::kV2Attributes, batch_.size() - record::kV2Attributes});
    benchmark::DoNotOptimize(crc_);
  }

 private:
  std::uint32_t crc_ = 0;
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
        BatchParams base{2, CodecSpec{}, payload, size, batch, options.payload_seed};
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

KBENCH_REGISTER_FAMILY(Batch, RegisterBatchFamily, FamilyTarget::kNone);

}  // namespace kbench::bench
