#pragma once

// Kafka record formats: shared types and wire constants.
//
//   v0 message (0.8):  offset i64 | size i32 | crc i32 | magic i8 | attributes i8 |
//                      key (i32 len + bytes) | value (i32 len + bytes)          26 bytes overhead
//   v1 message (0.10): as v0 with timestamp i64 after attributes              34 bytes overhead
//   v2 batch (0.11):   61-byte header, then records of zigzag varints (KIP-98)
//
// In every format the magic byte sits at offset 16 of an entry, which lets a reader tell the
// formats apart before parsing.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "harness/codec.h"

namespace kbench::record {

enum class TimestampType : std::int8_t { kCreateTime = 0, kLogAppendTime = 1 };

inline constexpr std::int64_t kNoTimestamp = -1;
inline constexpr std::size_t kMagicOffset = 16;

// v0/v1 message layout.
inline constexpr std::size_t kLogOverhead = 12;  // offset + size
inline constexpr std::size_t kMessageV0Overhead = 26;
inline constexpr std::size_t kMessageV1Overhead = 34;
inline constexpr std::uint8_t kLegacyCodecMask = 0x07;
inline constexpr std::uint8_t kLegacyTimestampTypeBit = 0x08;

// v2 batch header layout (byte offsets).
inline constexpr std::size_t kV2BaseOffset = 0;
inline constexpr std::size_t kV2BatchLength = 8;
inline constexpr std::size_t kV2PartitionLeaderEpoch = 12;
inline constexpr std::size_t kV2Magic = 16;
inline constexpr std::size_t kV2Crc = 17;
inline constexpr std::size_t kV2Attributes = 21;
inline constexpr std::size_t kV2LastOffsetDelta = 23;
inline constexpr std::size_t kV2BaseTimestamp = 27;
inline constexpr std::size_t kV2MaxTimestamp = 35;
inline constexpr std::size_t kV2ProducerId = 43;
inline constexpr std::size_t kV2ProducerEpoch = 51;
inline constexpr std::size_t kV2BaseSequence = 53;
inline constexpr std::size_t kV2RecordCount = 57;
inline constexpr std::size_t kV2HeaderBytes = 61;

inline constexpr std::uint16_t kV2CodecMask = 0x07;
inline constexpr std::uint16_t kV2TimestampTypeBit = 0x08;
inline constexpr std::uint16_t kV2TransactionalBit = 0x10;
inline constexpr std::uint16_t kV2ControlBit = 0x20;
inline constexpr std::uint16_t kV2DeleteHorizonBit = 0x40;

struct Header {
  std::string_view key;
  std::optional<std::string_view> value;  // nullopt = null
};

// A record to write. Views are not owned; they must outlive the write.
struct Record {
  std::int64_t timestamp = kNoTimestamp;  // ms since epoch; ignored by magic 0
  std::optional<std::string_view> key;    // nullopt = null key
  std::optional<std::string_view> value;  // nullopt = null value (a tombstone)
  std::span<const Header> headers;        // v2 only; v0/v1 cannot carry headers
};

// Options of a batch as a producer writes it. The v2-only fields default to what the Java
// client writes without idempotence (-1 = none).
struct BatchOptions {
  std::int8_t magic = 2;
  CodecSpec codec;
  TimestampType timestamp_type = TimestampType::kCreateTime;
  std::int64_t log_append_time = kNoTimestamp;  // with kLogAppendTime
  std::int64_t base_offset = 0;
  std::int32_t partition_leader_epoch = -1;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::int32_t base_sequence = -1;
  bool transactional = false;
  bool control = false;
};

// Bytes a v2 record takes on the wire (length prefix included).
std::size_t V2RecordSize(std::int64_t offset_delta, std::int64_t timestamp_delta,
                         const Record& record);
// Bytes a v0/v1 message takes on the wire (log overhead included).
std::size_t LegacyMessageSize(std::int8_t magic, const Record& record);

}  // namespace kbench::record
