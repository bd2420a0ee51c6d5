#include "harness/record/validator.h"

#include <algorithm>
#include <string>
#include <utility>

#include "harness/record/crc.h"
#include "harness/record/wire.h"

namespace kbench::record {

namespace {
Status Invalid(const std::string& what) { return Status::Error("invalid batch: " + what); }

// Kafka computes timestamp differences in Java longs, which wrap; so does this (C++20
// defines the conversion back from unsigned).
std::int64_t WrappingSub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
}  // namespace

Status LogValidator::CheckRecord(const BatchInfo& b, const DecodedRecord& r, std::size_t i,
                                 const ValidationOptions& options) {
  if (options.compacted_topic && !r.key) {
    return Invalid("record " + std::to_string(i) + " has no key, which a compacted topic needs");
  }
  if (options.timestamp_type == TimestampType::kCreateTime && b.magic > 0 &&
      r.timestamp != kNoTimestamp) {
    const std::int64_t diff = WrappingSub(options.log_append_time, r.timestamp);
    if (diff > options.timestamp_before_max_ms ||
        WrappingSub(0, diff) > options.timestamp_after_max_ms) {
      return Invalid("record " + std::to_string(i) + "'s timestamp " + std::to_string(r.timestamp) +
                     " is out of range: now is " + std::to_string(options.log_append_time) +
                     ", and it may lie at most " + std::to_string(options.timestamp_before_max_ms) +
                     " ms before and " + std::to_string(options.timestamp_after_max_ms) +
                     " ms after");
    }
  }
  return Status::Ok();
}

Status LogValidator::Validate(ByteBuffer& batch, const ValidationOptions& options,
                              ValidationResult* result) {
  *result = ValidationResult{};
  if (Status s = reader_.Read(batch.view(), decoded_); !s) return Invalid(s.message());
  if (decoded_.batches.empty()) return Invalid("no entries");
  const BatchInfo& first = decoded_.batches.front();
  for (const BatchInfo& b : decoded_.batches) {
    if (b.magic != first.magic) {
      return Invalid("mixes magic " + std::to_string(first.magic) + " and " +
                     std::to_string(b.magic));
    }
  }
  if (first.magic == 0 && options.timestamp_type == TimestampType::kLogAppendTime) {
    return Status::Error("LogAppendTime needs magic 1 or 2; the batch has magic 0");
  }
  if (first.magic == 2 || !first.codec.is_none()) {
    // One v2 batch or one wrapper per partition, as Kafka requires of a produce request.
    if (decoded_.batches.size() != 1) {
      return Invalid(std::to_string(decoded_.batches.size()) +
                     " entries where one batch or compressed wrapper was expected");
    }
    return first.magic == 2 ? ValidateV2(batch, options, result)
                            : ValidateLegacyCompressed(batch, options, result);
  }
  return ValidateLegacyPlain(batch, options, result);
}

Status LogValidator::ValidateV2(ByteBuffer& batch, const ValidationOptions& options,
                                ValidationResult* result) {
  const BatchInfo& b = decoded_.batches.front();
  const std::size_t n = b.record_count;
  if (n == 0) return Invalid("v2 batch holds no records");
  if (b.control) return Invalid("producers may not write control batches");
  if (b.producer_id >= 0 && b.base_sequence < 0) {
    return Invalid("producer id " + std::to_string(b.producer_id) + " with base sequence " +
                   std::to_string(b.base_sequence));
  }
  if (b.last_offset_delta != static_cast<std::int64_t>(n) - 1) {
    return Invalid("lastOffsetDelta " + std::to_string(b.last_offset_delta) + " does not match " +
                   std::to_string(n) + " records");
  }
  if (b.timestamp_type == TimestampType::kLogAppendTime &&
      options.timestamp_type == TimestampType::kCreateTime) {
    return Invalid("producer set LogAppendTime on a CreateTime topic");
  }
  std::int64_t max_ts = kNoTimestamp;
  for (std::size_t i = 0; i < n; ++i) {
    const DecodedRecord& r = decoded_.records[b.first_record + i];
    if (r.stored_offset != static_cast<std::int64_t>(i)) {
      return Invalid("record " + std::to_string(i) + " has offsetDelta " +
                     std::to_string(r.stored_offset));
    }
    if (Status s = CheckRecord(b, r, i, options); !s) return s;
    max_ts = std::max(max_ts, r.timestamp);
  }
  std::uint8_t* h = batch.data();
  // Neither field is covered by the CRC-32C: this is the whole point of v2's layout.
  wire::Put64(h + kV2BaseOffset, static_cast<std::uint64_t>(options.base_offset));
  wire::Put32(h + kV2PartitionLeaderEpoch,
              static_cast<std::uint32_t>(options.partition_leader_epoch));
  bool rewrite = false;
  if (options.timestamp_type == TimestampType::kLogAppendTime) {
    wire::Put16(h + kV2Attributes, static_cast<std::uint16_t>(b.attributes | kV2TimestampTypeBit));
    max_ts = options.log_append_time;
    rewrite = true;
  } else if (b.max_timestamp != max_ts) {
    rewrite = true;  // Kafka corrects a CreateTime batch's maxTimestamp
  }
  if (rewrite) {
    wire::Put64(h + kV2MaxTimestamp, static_cast<std::uint64_t>(max_ts));
    wire::Put32(h + kV2Crc, Crc32c({h + kV2Attributes, b.wire_bytes - kV2Attributes}));
    result->crc_recomputed = true;
  }
  result->records = n;
  result->last_offset = options.base_offset + static_cast<std::int64_t>(n) - 1;
  result->max_timestamp = max_ts;
  return Status::Ok();
}

Status LogValidator::ValidateLegacyCompressed(ByteBuffer& batch, const ValidationOptions& options,
                                              ValidationResult* result) {
  const BatchInfo& b = decoded_.batches.front();
  const std::size_t n = b.record_count;
  for (std::size_t i = 0; i < n; ++i) {
    if (Status s = CheckRecord(b, decoded_.records[b.first_record + i], i, options); !s) return s;
  }
  if (b.magic == 0) return Rebuild(batch, options, result);  // absolute inner offsets
  if (b.timestamp_type == TimestampType::kLogAppendTime &&
      options.timestamp_type == TimestampType::kCreateTime) {
    return Invalid("producer set LogAppendTime on a CreateTime topic");
  }
  std::int64_t max_ts = kNoTimestamp;
  bool in_place = true;
  for (std::size_t i = 0; i < n; ++i) {
    const DecodedRecord& r = decoded_.records[b.first_record + i];
    if (r.stored_offset != static_cast<std::int64_t>(i)) in_place = false;
    max_ts = std::max(max_ts, r.timestamp);
  }
  if (!in_place) return Rebuild(batch, options, result);

  std::uint8_t* m = batch.data();
  std::int64_t last = options.base_offset + static_cast<std::int64_t>(n) - 1;
  wire::Put64(m, static_cast<std::uint64_t>(last));  // the offset field is outside the CRC
  std::uint8_t* attributes = m + kMagicOffset + 1;
  std::uint8_t* timestamp = attributes + 1;
  bool rewrite = false;
  if (options.timestamp_type == TimestampType::kLogAppendTime) {
    *attributes = static_cast<std::uint8_t>(*attributes | kLegacyTimestampTypeBit);
    max_ts = options.log_append_time;
    rewrite = true;
  } else if (b.max_timestamp != max_ts) {
    rewrite = true;
  }
  if (rewrite) {
    wire::Put64(timestamp, static_cast<std::uint64_t>(max_ts));
    wire::Put32(m + 12, Crc32({m + kMagicOffset, b.wire_bytes - kMagicOffset}));
    result->crc_recomputed = true;
  }
  result->records = n;
  result->last_offset = last;
  result->max_timestamp = max_ts;
  return Status::Ok();
}

Status LogValidator::Rebuild(ByteBuffer& batch, const ValidationOptions& options,
                             ValidationResult* result) {
  const BatchInfo& b = decoded_.batches.front();
  BatchOptions o;
  o.magic = b.magic;
  o.codec = b.codec;
  o.base_offset = options.base_offset;
  if (b.magic > 0) {
    o.timestamp_type = options.timestamp_type;
    o.log_append_time = options.log_append_time;
  }
  if (Status s = builder_.Begin(o, rebuilt_); !s) return s;
  std::int64_t max_ts = kNoTimestamp;
  for (std::size_t i = 0; i < b.record_count; ++i) {
    const DecodedRecord& d = decoded_.records[b.first_record + i];
    Record r;
    r.timestamp = d.timestamp;
    r.key = d.key;
    r.value = d.value;
    if (Status s = builder_.Append(r); !s)
      return Invalid("record " + std::to_string(i) + ": " + s.message());
    max_ts = std::max(max_ts, d.timestamp);
  }
  if (Status s = builder_.Finish(); !s) return s;
  std::swap(batch, rebuilt_);  // keeps both buffers' capacity for the next call
  result->records = b.record_count;
  result->last_offset = options.base_offset + static_cast<std::int64_t>(b.record_count) - 1;
  result->max_timestamp =
      o.timestamp_type == TimestampType::kLogAppendTime ? options.log_append_time : max_ts;
  result->recompressed = true;
  result->crc_recomputed = true;
  return Status::Ok();
}

Status LogValidator::ValidateLegacyPlain(ByteBuffer& batch, const ValidationOptions& options,
                                         ValidationResult* result) {
  std::int64_t max_ts = kNoTimestamp;
  std::int64_t offset = options.base_offset;
  for (std::size_t i = 0; i < decoded_.batches.size(); ++i) {
    const BatchInfo& b = decoded_.batches[i];
    if (b.timestamp_type == TimestampType::kLogAppendTime &&
        options.timestamp_type == TimestampType::kCreateTime) {
      return Invalid("producer set LogAppendTime on a CreateTime topic");
    }
    if (Status s = CheckRecord(b, decoded_.records[b.first_record], i, options); !s) return s;
    std::uint8_t* m = batch.data() + b.wire_offset;
    wire::Put64(m, static_cast<std::uint64_t>(offset++));
    std::int64_t ts = b.max_timestamp;
    if (b.magic == 1 && options.timestamp_type == TimestampType::kLogAppendTime) {
      std::uint8_t* attributes = m + kMagicOffset + 1;
      *attributes = static_cast<std::uint8_t>(*attributes | kLegacyTimestampTypeBit);
      ts = options.log_append_time;
      wire::Put64(attributes + 1, static_cast<std::uint64_t>(ts));
      wire::Put32(m + 12, Crc32({m + kMagicOffset, b.wire_bytes - kMagicOffset}));
      result->crc_recomputed = true;
    }
    max_ts = std::max(max_ts, ts);
  }
  result->records = decoded_.batches.size();
  result->last_offset = offset - 1;
  result->max_timestamp = max_ts;
  return Status::Ok();
}

}  // namespace kbench::record
