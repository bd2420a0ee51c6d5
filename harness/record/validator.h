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
// Every record is checked as Kafka's validateRecord does: a key on compacted topics, and on
// CreateTime topics a timestamp within message.timestamp.before.max.ms /
// after.max.ms of "now" (KIP-937). v2 batches from producers must not be control batches,
// must count their records consistently, and carry a sequence when they carry a producer
// id. The batch is rewritten in place; a LogValidator reuses its buffers and codec contexts.
//
// Not modelled: producer state (sequence and epoch against earlier batches; that is the
// log's, not LogValidator's), and the rule that a producer's batch must not claim
// LogAppendTime on a LogAppendTime topic: the Format family re-validates its own output.

#include <cstddef>
#include <cstdint>
#include <limits>

#include "harness/bytes.h"
#include "harness/record/reader.h"
#include "harness/record/record.h"
#include "harness/record/writer.h"
#include "harness/status.h"

namespace kbench::record {

inline constexpr std::int64_t kNoTimestampLimit = std::numeric_limits<std::int64_t>::max();
// Kafka 4's default for message.timestamp.after.max.ms (before.max.ms: no limit).
inline constexpr std::int64_t kKafka4TimestampAfterMaxMs = 3600000;

struct ValidationOptions {
  std::int64_t base_offset = 0;                               // the partition's next offset
  std::int32_t partition_leader_epoch = 0;                    // v2
  TimestampType timestamp_type = TimestampType::kCreateTime;  // the topic's setting
  // The broker's "now": what LogAppendTime writes, and what CreateTime limits refer to.
  std::int64_t log_append_time = 0;
  // CreateTime topics: a record's timestamp t must satisfy now - t <= before and
  // t - now <= after (message.timestamp.before.max.ms, message.timestamp.after.max.ms).
  std::int64_t timestamp_before_max_ms = kNoTimestampLimit;
  std::int64_t timestamp_after_max_ms = kNoTimestampLimit;
  bool compacted_topic = false;  // cleanup.policy=compact: every record needs a key
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
  // Kafka's validateRecord for record i of batch b: key and timestamp.
  static Status CheckRecord(const BatchInfo& b, const DecodedRecord& r, std::size_t i,
                            const ValidationOptions& options);

  BatchReader reader_;
  ReadResult decoded_;
  BatchBuilder builder_;
  ByteBuffer rebuilt_;
};

}  // namespace kbench::record
