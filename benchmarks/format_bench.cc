// Format family: what the record format itself costs, apart from compression.
//
// Both variants walk, per iteration, every batch of a working set of distinct batches
// (fixtures/batch_records.h: at least 64 batches and --working-set-bytes of values, 16 MiB by
// default); counters are over the whole working set, records_per_batch is its mean.
// overhead: building uncompressed batches of small to large records, reporting the
//   bytes each format adds per record (`overhead_bytes_per_record`: v0 26, v1 34, v2 its
//   varints plus its share of the 61-byte batch header) and `wire_bytes_per_record`.
//   Timed: building the batches. The counters are exact, the time is secondary.
// validate: the broker's work on each produced batch (LogValidator model, see
//   harness/record/validator.h): v0 compressed decompresses, reassigns absolute offsets and
//   recompresses; v1 compressed validates the inner records and rewrites the wrapper; v2
//   checks the CRC-32C, decodes every record and sets baseOffset/partitionLeaderEpoch.
//   Every record's timestamp is checked against Kafka 4's default limits, as a broker does.
//   Timed: one Validate call on each batch, in place (validation is idempotent, so the
//   batches are not restored between iterations: restoring would time a memcpy too).
//   Real time is per working set and items_per_second per record, so v0 : v1 : v2 read off
//   one run.
// Not timed: payload generation, producing the batch, verification.
// Verified before timing: every built or validated batch reads back to the records with the
// assigned offsets, and validating twice gives the same bytes; else SkipWithError.

#include <array>
#include <cstring>
#include <memory>
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
#include "harness/record/reader.h"
#include "harness/record/validator.h"
#include "harness/record/writer.h"

namespace kbench::bench {
namespace {

using record::BatchBuilder;
using record::BatchOptions;
using record::TimestampType;

// ------------------------------------------------------------------ parameters

constexpr std::array<int, 3> kMagics = {0, 1, 2};
constexpr std::array<std::size_t, 3> kOverheadRecordBytes = {10, 100, 1000};
constexpr std::size_t kOverheadBatchBytes = 64 * 1024;
constexpr std::string_view kPayload = "az";

constexpr std::array<std::string_view, 4> kValidateCodecs = {"none", "gzip", "lz4", "zstd"};
constexpr std::array<std::size_t, 2> kValidateRecordBytes = {100, 1000};
constexpr std::size_t kValidateBatchBytes = 64 * 1024;
constexpr std::int64_t kLogAppendTime = 1700000900000;
constexpr std::int64_t kAssignedBaseOffset = 123456789;
constexpr std::int32_t kLeaderEpoch = 7;

// ------------------------------------------------------------------ data

// A batch as produced, plus the timestamp type the broker's topic applies.
struct FormatParams : BatchParams {
  TimestampType timestamp_type = TimestampType::kCreateTime;
};

FormatParams MakeParams(int magic, const CodecSpec& codec, TimestampType timestamp_type,
                        const PayloadSpec& payload, std::size_t record_bytes,
                        std::size_t batch_bytes, std::uint64_t seed,
                        const WorkingSetSpec& working_set) {
  FormatParams p;
  p.magic = magic;
  p.codec = codec;
  p.timestamp_type = timestamp_type;
  p.payload = payload;
  p.record_bytes = SizeSpec{record_bytes, record_bytes};
  p.batch_bytes = batch_bytes;
  p.seed = seed;
  p.working_set = working_set;
  return p;
}

// ------------------------------------------------------------------ work

std::size_t TotalSize(const std::vector<ByteBuffer>& buffers) {
  std::size_t n = 0;
  for (const auto& b : buffers) n += b.size();
  return n;
}

class OverheadWork : public WorkingSetWork {
 public:
  explicit OverheadWork(const FormatParams& p) : WorkingSetWork(p), options_(WriterOptions(p)) {
    out_.resize(data_.batch_count());
  }
  Status Verify() {
    for (std::size_t b = 0; b < out_.size(); ++b) {
      if (Status s = record::WriteBatch(builder_, options_, data_.batch(b), out_[b]); !s) return s;
      if (Status s = ReadBackError(out_[b], data_.batch(b), 0, false); !s) return s;
    }
    return Status::Ok();
  }
  void Iterate() {
    for (std::size_t b = 0; b < out_.size(); ++b)
      ok_ &= record::WriteBatch(builder_, options_, data_.batch(b), out_[b]).ok();
    benchmark::DoNotOptimize(out_.data());
    benchmark::ClobberMemory();
  }
  void Report(benchmark::State& state) {
    if (!ok_) state.SkipWithError("building failed inside the timed loop");
    auto n = static_cast<double>(data_.record_count());
    auto wire = static_cast<double>(TotalSize(out_));
    double payload = static_cast<double>(data_.total_value_bytes() + data_.total_key_bytes());
    state.counters[counters::kOverheadBytesPerRecord] = counters::Value((wire - payload) / n);
    state.counters[counters::kWireBytesPerRecord] = counters::Value(wire / n);
    state.counters[counters::kRecordsPerBatch] =
        counters::Value(n / static_cast<double>(data_.batch_count()));
  }

 private:
  BatchOptions options_;
  BatchBuilder builder_;
  std::vector<ByteBuffer> out_;
  bool ok_ = true;
};

class ValidateWork : public WorkingSetWork {
 public:
  static StatusOr<std::unique_ptr<ValidateWork>> Create(const FormatParams& p) {
    std::unique_ptr<ValidateWork> work(new ValidateWork(p));
    BatchBuilder builder;
    work->batches_.resize(work->data_.batch_count());
    for (std::size_t b = 0; b < work->batches_.size(); ++b) {
      Status s =
          record::WriteBatch(builder, WriterOptions(p), work->data_.batch(b), work->batches_[b]);
      if (!s) return Status::Error("producing the batch failed: " + s.message());
    }
    work->produced_bytes_ = TotalSize(work->batches_);
    return work;
  }
  Status Verify() {
    for (std::size_t b = 0; b < batches_.size(); ++b) {
      ByteBuffer& batch = batches_[b];
      record::ValidationResult first;
      if (Status s = validator_.Validate(batch, options_, &first); !s) return s;
      ByteBuffer once = batch;
      if (Status s = validator_.Validate(batch, options_, &result_); !s) return s;
      if (once.size() != batch.size() || std::memcmp(once.data(), batch.data(), once.size()) != 0) {
        return Status::Error(
            "validating a validated batch changed it: the timed loop would not repeat the same "
            "work");
      }
      if (Status s = ReadBackError(batch, data_.batch(b), kAssignedBaseOffset, false); !s) return s;
    }
    return Status::Ok();
  }
  void Iterate() {
    for (ByteBuffer& batch : batches_) ok_ &= validator_.Validate(batch, options_, &result_).ok();
    benchmark::DoNotOptimize(batches_.data());
    benchmark::ClobberMemory();
  }
  void Report(benchmark::State& state) {
    if (!ok_) state.SkipWithError("validation failed inside the timed loop");
    auto n = static_cast<double>(data_.record_count());
    state.counters[counters::kRecordsPerBatch] =
        counters::Value(n / static_cast<double>(data_.batch_count()));
    state.counters[counters::kWireBytesPerRecord] =
        counters::Value(static_cast<double>(produced_bytes_) / n);
  }

 private:
  explicit ValidateWork(const FormatParams& p) : WorkingSetWork(p) {
    options_.base_offset = kAssignedBaseOffset;
    options_.partition_leader_epoch = kLeaderEpoch;
    options_.timestamp_type = p.timestamp_type;
    options_.log_append_time = kLogAppendTime;  // "now": after every record's timestamp
    options_.timestamp_after_max_ms = record::kKafka4TimestampAfterMaxMs;
  }

  record::ValidationOptions options_;
  record::LogValidator validator_;
  record::ValidationResult result_;
  std::vector<ByteBuffer> batches_;
  std::size_t produced_bytes_ = 0;
  bool ok_ = true;
};

// ------------------------------------------------------------------ registration

void RegisterFormatFamily(const Options& options, BenchSession& session) {
  PayloadSpec payload =
      options.payloads.empty() ? ParsePayloadSpec(kPayload) : options.payloads.front();
  for (int magic : kMagics) {
    for (std::size_t bytes : kOverheadRecordBytes) {
      FormatParams p = MakeParams(magic, CodecSpec{}, TimestampType::kCreateTime, payload, bytes,
                                  kOverheadBatchBytes, options.payload_seed, options.working_set);
      RegisterWork<OverheadWork>(
          session, BenchName("Format", "overhead").Add("magic", magic).Add("record_bytes", bytes),
          p);
    }
  }

  std::vector<CodecSpec> codecs;
  if (options.codecs.empty()) {
    for (std::string_view c : kValidateCodecs) codecs.push_back(ParseCodecSpec(c));
  } else {
    codecs = options.codecs;
  }
  for (auto& codec : codecs) MakeCodec(codec);  // validates levels before anything runs
  for (int magic : kMagics) {
    for (const auto& codec : codecs) {
      if (!KafkaCarries(codec, magic)) continue;  // e.g. zstd before v2
      for (TimestampType tt : {TimestampType::kCreateTime, TimestampType::kLogAppendTime}) {
        if (magic == 0 && tt == TimestampType::kLogAppendTime) continue;  // v0 has no timestamps
        for (std::size_t bytes : kValidateRecordBytes) {
          FormatParams p = MakeParams(magic, codec, tt, payload, bytes, kValidateBatchBytes,
                                      options.payload_seed, options.working_set);
          BenchName name("Format", "validate");
          name.Add("magic", magic)
              .Add("codec", codec.Name())
              .Add("timestamp", tt == TimestampType::kCreateTime ? "create" : "log_append")
              .Add("payload", payload.Name())
              .Add("record_bytes", bytes)
              .Add("batch_bytes", kValidateBatchBytes);
          RegisterWork<ValidateWork>(session, name, p);
        }
      }
    }
  }
}

}  // namespace

constexpr FamilyAbout kFormatAbout{
    "the record format's own cost: `overhead` (bytes each format adds per record) and "
    "`validate` (the broker's LogValidator work per batch: v0 recompresses, v1 "
    "rewrites the wrapper, v2 sets two header fields; every record's timestamp "
    "checked against Kafka 4's default limits)",
    "Format/validate/magic:1/codec:gzip/timestamp:create/payload:az/record_bytes:100/"
    "batch_bytes:65536"};
KBENCH_REGISTER_FAMILY(Format, RegisterFormatFamily, FamilyTarget::kNone, kFormatAbout);

}  // namespace kbench::bench
