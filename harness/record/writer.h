#pragma once

// Writes v0/v1 message sets and v2 record batches the way Kafka's Java client does
// (MemoryRecordsBuilder), so uncompressed output is byte-identical to it.
//
// One BatchBuilder is meant to live across many batches: its codec contexts and scratch
// buffers are reused, so building a batch allocates nothing in steady state.

#include <cstddef>
#include <cstdint>
#include <span>

#include "harness/bytes.h"
#include "harness/record/crc_copy.h"
#include "harness/record/record.h"
#include "harness/record/record_codec.h"
#include "harness/status.h"

namespace kbench::record {

// Up to 16 computed bytes of a record not yet handed to the CRC copier (writer.cc).
struct PendingBytes {
  std::uint64_t lo = 0;  // bytes 0-7, little-endian
  std::uint64_t hi = 0;  // bytes 8-15
  std::size_t n = 0;
};

class BatchBuilder {
 public:
  // An uncompressed v2 batch is copied and CRC'd in one pass (Crc32cCopier) when the CPU
  // has the fused kernel; kPortable forces the two-pass path (memcpy, then one Crc32c over
  // the batch) so tests can check both give the same bytes.
  explicit BatchBuilder(Crc32cKernel kernel = Crc32cKernel::kAuto) : copier_(kernel) {}

  // Starts a batch written to `out` (its contents are replaced). Fails on a magic other than
  // 0-2, zstd below magic 2, LogAppendTime with magic 0, or an invalid codec level.
  Status Begin(const BatchOptions& options, ByteBuffer& out);

  // Appends the next record; its offset is base_offset + records(). Fails on headers below
  // magic 2 and on a negative timestamp (other than -1) for magic 1.
  Status Append(const Record& record);
  // Appends records in order, as Append(record) for each, stopping at the first error.
  // Faster for many records: uncompressed v2 batches copy them in chunks.
  Status Append(std::span<const Record> records);

  // Completes the batch in `out`: compresses, writes the header or wrapper, and the CRC.
  // A batch needs at least one record.
  Status Finish();

  std::size_t records() const { return count_; }
  // Size of the records section before compression (inner message set for v0/v1).
  std::size_t uncompressed_bytes() const;

 private:
  Status AppendV2(const Record& record);
  Status AppendLegacy(const Record& record);
  Status FinishV2();
  Status FinishLegacyWrapper();

  BatchOptions opts_;
  ByteBuffer* out_ = nullptr;
  ByteBuffer* target_ = nullptr;  // where records go: out_, or raw_ when compressing
  bool compressing_ = false;
  bool fused_crc_ = false;  // records go through copier_, which CRCs them on the way in
  bool started_ = false;
  std::size_t count_ = 0;
  std::int64_t base_timestamp_ = kNoTimestamp;
  std::int64_t max_timestamp_ = kNoTimestamp;
  ByteBuffer raw_;
  ByteBuffer compressed_;
  RecordCodecs codecs_;
  Crc32cCopier copier_;
  PendingBytes pending_;  // the last record's tail, written at the next Append or Finish
};

// Convenience: one whole batch from a list of records.
Status WriteBatch(BatchBuilder& builder, const BatchOptions& options,
                  std::span<const Record> records, ByteBuffer& out);

}  // namespace kbench::record
