#pragma once

// The broker's work on a produced batch, modelled on Kafka's LogValidator
// (validateMessagesAndAssignOffsets). What it costs differs by format, which is what the
// Format family measures:
//   v0 compressed:   decompress, validate every message, assign absolute inner offsets,
//                    recompress, rebuild the wrapper (inner offsets are absolute).
//   v1 compressed:   decompress and validate every inner message, then rewrite only the
//                    wrapper's offset (and for LogAppendTime its timestamp and CRC-32).
//                    Inner offsets that are not 0..n-1 force a rebuild, as in Kafka.
//   v2:              check CRC-32C, decode (decompress) every record, then set baseOffset and
//                    partitionLeaderEpoch, which the CRC does not cover. LogAppendTime sets
//                    maxTimestamp and the timestamp-type bit and recomputes the CRC-32C.
//   v0/v1 uncompressed: validate each message and assign offsets in place.
// The batch is rewritten in place; a LogValidator reuses its buffers and codec contexts.
//
// Not modelled: timestamp-difference limits, compacted-topic key checks, producer state.

#include <cstddef>
#include <cstdint>

#include "harness/bytes.h"
#include "harness/record/reader.h"
#include "harness/record/record.h"
#include "harness/record/writer.h"
#include "harness/status.h"

namespace kbench::record {

struct ValidationOptions {
  std::int64_t base_offset = 0;                               // the partition's next offset
  std::int32_t partition_leader_epoch = 0;                    // v2
  TimestampType timestamp_type = TimestampType::kCreateTime;  // the topic's setting
  std::int64_t log_append_time = 0;                           // "now" for LogAppendTime
};

struct ValidationResult {
  std::size_t records = 0;
  std::int64_t last_offset = 0;
  std::int64_t max_timestamp = kNoTimestamp;
  bool recompressed = false;    // the batch was rebuilt (v0 compressed)
  bool crc_recomputed = false;  // a checksum was recomputed
};

class LogValidator {
 public:
  explicit LogValidator(ReaderOptions options = {}) : reader_(options) {}

  // Validates `batch` (one v2 batch, one v0/v1 compressed wrapper, or a set of
  // uncompressed v0/v1 messages, as one partition of a produce request holds) and rewrites
  // it as the broker would append it.
  Status Validate(ByteBuffer& batch, const ValidationOptions& options, ValidationResult* result);

 private:
  Status ValidateV2(ByteBuffer& batch, const ValidationOptions& options, ValidationResult* result);
  Status ValidateLegacyCompressed(ByteBuffer& batch, const ValidationOptions& options,
                                  ValidationResult* result);
  Status ValidateLegacyPlain(ByteBuffer& batch, const ValidationOptions& options,
                             ValidationResult* result);
  Status Rebuild(ByteBuffer& batch, const ValidationOptions& options, ValidationResult* result);

  BatchReader reader_;
  ReadResult decoded_;
  BatchBuilder builder_;
  ByteBuffer rebuilt_;
};

}  // namespace kbench::record
