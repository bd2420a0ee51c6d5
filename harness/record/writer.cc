#include "harness/record/writer.h"

#include <algorithm>
#include <limits>
#include <string>

#include "harness/record/crc.h"
#include "harness/record/varint.h"
#include "harness/record/wire.h"

namespace kbench::record {

namespace {

std::size_t V2BodySize(std::int64_t offset_delta, std::int64_t timestamp_delta, const Record& r) {
  std::size_t n = 1;  // attributes
  n += VarlongSize(timestamp_delta);
  n += VarintSize(static_cast<std::int32_t>(offset_delta));
  n += r.key ? VarintSize(static_cast<std::int32_t>(r.key->size())) + r.key->size() : 1;
  n += r.value ? VarintSize(static_cast<std::int32_t>(r.value->size())) + r.value->size() : 1;
  n += VarintSize(static_cast<std::int32_t>(r.headers.size()));
  for (const Header& h : r.headers) {
    n += VarintSize(static_cast<std::int32_t>(h.key.size())) + h.key.size();
    n += h.value ? VarintSize(static_cast<std::int32_t>(h.value->size())) + h.value->size() : 1;
  }
  return n;
}

std::uint8_t* PutBytes(std::uint8_t* p, std::string_view s) {
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

std::uint8_t* PutVarBytes(std::uint8_t* p, const std::optional<std::string_view>& s) {
  if (!s) return WriteVarint(-1, p);
  p = WriteVarint(static_cast<std::int32_t>(s->size()), p);
  return PutBytes(p, *s);
}

std::uint8_t* PutLegacyBytes(std::uint8_t* p, const std::optional<std::string_view>& s) {
  if (!s) {
    wire::Put32(p, 0xFFFFFFFFu);
    return p + 4;
  }
  wire::Put32(p, static_cast<std::uint32_t>(s->size()));
  return PutBytes(p + 4, *s);
}

constexpr std::size_t kMaxField = static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());

bool TooLong(const std::optional<std::string_view>& s) { return s && s->size() > kMaxField / 2; }

}  // namespace

std::size_t V2RecordSize(std::int64_t offset_delta, std::int64_t timestamp_delta,
                         const Record& record) {
  std::size_t body = V2BodySize(offset_delta, timestamp_delta, record);
  return VarintSize(static_cast<std::int32_t>(body)) + body;
}

std::size_t LegacyMessageSize(std::int8_t magic, const Record& record) {
  std::size_t n = magic == 0 ? kMessageV0Overhead : kMessageV1Overhead;
  if (record.key) n += record.key->size();
  if (record.value) n += record.value->size();
  return n;
}

Status BatchBuilder::Begin(const BatchOptions& options, ByteBuffer& out) {
  started_ = false;
  if (options.magic < 0 || options.magic > 2) {
    return Status::Error("unsupported magic " + std::to_string(options.magic) + " (valid: 0, 1, 2)");
  }
  if (static_cast<int>(options.codec.id) > static_cast<int>(CodecId::kZstd)) {
    return Status::Error("unknown codec id " + std::to_string(static_cast<int>(options.codec.id)));
  }
  if (options.codec.id == CodecId::kZstd && options.magic < 2) {
    return Status::Error("zstd needs magic 2 (KIP-110); got magic " + std::to_string(options.magic));
  }
  if (options.magic == 0 && options.timestamp_type == TimestampType::kLogAppendTime) {
    return Status::Error("magic 0 has no timestamps, so no LogAppendTime");
  }
  opts_ = options;
  out_ = &out;
  compressing_ = options.codec.id != CodecId::kNone;
  count_ = 0;
  base_timestamp_ = kNoTimestamp;
  max_timestamp_ = kNoTimestamp;
  out.clear();
  raw_.clear();
  target_ = compressing_ ? &raw_ : &out;
  if (options.magic == 2) out.ResizeUninitialized(kV2HeaderBytes);  // filled in by Finish
  started_ = true;
  return Status::Ok();
}

std::size_t BatchBuilder::uncompressed_bytes() const {
  if (!started_) return 0;
  if (compressing_) return raw_.size();
  return opts_.magic == 2 ? out_->size() - kV2HeaderBytes : out_->size();
}

Status BatchBuilder::Append(const Record& record) {
  if (!started_) return Status::Error("Append before Begin");
  if (TooLong(record.key) || TooLong(record.value)) {
    return Status::Error("record key or value exceeds Kafka's int32 field size");
  }
  return opts_.magic == 2 ? AppendV2(record) : AppendLegacy(record);
}

Status BatchBuilder::AppendV2(const Record& r) {
  if (count_ == 0) base_timestamp_ = r.timestamp;  // as MemoryRecordsBuilder does
  std::int64_t ts_delta = r.timestamp - base_timestamp_;
  auto offset_delta = static_cast<std::int64_t>(count_);
  if (offset_delta > std::numeric_limits<std::int32_t>::max()) {
    return Status::Error("too many records for one batch");
  }
  std::size_t body = V2BodySize(offset_delta, ts_delta, r);
  if (body > kMaxField) return Status::Error("record exceeds Kafka's int32 size");
  ByteBuffer& t = *target_;
  std::size_t old = t.size();
  t.ResizeUninitialized(old + VarintSize(static_cast<std::int32_t>(body)) + body);
  std::uint8_t* p = t.data() + old;
  p = WriteVarint(static_cast<std::int32_t>(body), p);
  *p++ = 0;  // record attributes: unused
  p = WriteVarlong(ts_delta, p);
  p = WriteVarint(static_cast<std::int32_t>(offset_delta), p);
  p = PutVarBytes(p, r.key);
  p = PutVarBytes(p, r.value);
  p = WriteVarint(static_cast<std::int32_t>(r.headers.size()), p);
  for (const Header& h : r.headers) {
    p = PutVarBytes(p, h.key);
    p = PutVarBytes(p, h.value);
  }
  max_timestamp_ = std::max(max_timestamp_, r.timestamp);
  ++count_;
  return Status::Ok();
}

Status BatchBuilder::AppendLegacy(const Record& r) {
  if (!r.headers.empty()) {
    return Status::Error("magic " + std::to_string(opts_.magic) + " cannot carry record headers");
  }
  const bool v1 = opts_.magic == 1;
  std::int64_t timestamp = r.timestamp;
  if (v1 && opts_.timestamp_type == TimestampType::kLogAppendTime) timestamp = opts_.log_append_time;
  if (v1 && timestamp < kNoTimestamp) {
    return Status::Error("invalid negative timestamp " + std::to_string(timestamp));
  }
  // Inner offsets: absolute for v0, relative for v1 (KIP-31); top-level: absolute.
  std::int64_t offset = static_cast<std::int64_t>(count_);
  if (!(v1 && compressing_)) offset += opts_.base_offset;
  std::size_t total = LegacyMessageSize(opts_.magic, r);
  ByteBuffer& t = *target_;
  std::size_t old = t.size();
  t.ResizeUninitialized(old + total);
  std::uint8_t* m = t.data() + old;
  wire::Put64(m, static_cast<std::uint64_t>(offset));
  wire::Put32(m + 8, static_cast<std::uint32_t>(total - kLogOverhead));
  std::uint8_t* p = m + kMagicOffset;
  *p++ = static_cast<std::uint8_t>(opts_.magic);
  std::uint8_t attributes = 0;
  if (v1 && opts_.timestamp_type == TimestampType::kLogAppendTime) attributes |= kLegacyTimestampTypeBit;
  *p++ = attributes;
  if (v1) {
    wire::Put64(p, static_cast<std::uint64_t>(timestamp));
    p += 8;
  }
  p = PutLegacyBytes(p, r.key);
  PutLegacyBytes(p, r.value);
  wire::Put32(m + 12, Crc32({m + kMagicOffset, total - kMagicOffset}));
  if (v1) max_timestamp_ = std::max(max_timestamp_, timestamp);
  ++count_;
  return Status::Ok();
}

Status BatchBuilder::Finish() {
  if (!started_) return Status::Error("Finish before Begin");
  started_ = false;
  if (count_ == 0) return Status::Error("a batch needs at least one record");
  if (opts_.magic == 2) return FinishV2();
  if (compressing_) return FinishLegacyWrapper();
  return Status::Ok();
}

Status BatchBuilder::FinishV2() {
  ByteBuffer& out = *out_;
  if (compressing_) {
    if (Status s = codecs_.Compress(2, opts_.codec, raw_.view(), compressed_); !s) return s;
    out.ResizeUninitialized(kV2HeaderBytes);
    out.Append(compressed_.view());
  }
  if (out.size() - kLogOverhead > kMaxField) return Status::Error("batch exceeds Kafka's int32 size");
  std::uint8_t* h = out.data();
  std::uint16_t attributes = static_cast<std::uint16_t>(opts_.codec.id);
  std::int64_t max_timestamp = max_timestamp_;
  if (opts_.timestamp_type == TimestampType::kLogAppendTime) {
    attributes |= kV2TimestampTypeBit;
    max_timestamp = opts_.log_append_time;
  }
  if (opts_.transactional) attributes |= kV2TransactionalBit;
  if (opts_.control) attributes |= kV2ControlBit;
  wire::Put64(h + kV2BaseOffset, static_cast<std::uint64_t>(opts_.base_offset));
  wire::Put32(h + kV2BatchLength, static_cast<std::uint32_t>(out.size() - kLogOverhead));
  wire::Put32(h + kV2PartitionLeaderEpoch, static_cast<std::uint32_t>(opts_.partition_leader_epoch));
  h[kV2Magic] = 2;
  wire::Put16(h + kV2Attributes, attributes);
  wire::Put32(h + kV2LastOffsetDelta, static_cast<std::uint32_t>(count_ - 1));
  wire::Put64(h + kV2BaseTimestamp, static_cast<std::uint64_t>(base_timestamp_));
  wire::Put64(h + kV2MaxTimestamp, static_cast<std::uint64_t>(max_timestamp));
  wire::Put64(h + kV2ProducerId, static_cast<std::uint64_t>(opts_.producer_id));
  wire::Put16(h + kV2ProducerEpoch, static_cast<std::uint16_t>(opts_.producer_epoch));
  wire::Put32(h + kV2BaseSequence, static_cast<std::uint32_t>(opts_.base_sequence));
  wire::Put32(h + kV2RecordCount, static_cast<std::uint32_t>(count_));
  wire::Put32(h + kV2Crc, Crc32c({h + kV2Attributes, out.size() - kV2Attributes}));
  return Status::Ok();
}

Status BatchBuilder::FinishLegacyWrapper() {
  if (Status s = codecs_.Compress(opts_.magic, opts_.codec, raw_.view(), compressed_); !s) return s;
  const bool v1 = opts_.magic == 1;
  std::size_t total = (v1 ? kMessageV1Overhead : kMessageV0Overhead) + compressed_.size();
  if (total - kLogOverhead > kMaxField) return Status::Error("wrapper exceeds Kafka's int32 size");
  ByteBuffer& out = *out_;
  out.ResizeUninitialized(total);
  std::uint8_t* m = out.data();
  // The wrapper carries the last inner record's absolute offset, for v0 and v1 alike.
  wire::Put64(m, static_cast<std::uint64_t>(opts_.base_offset + static_cast<std::int64_t>(count_) - 1));
  wire::Put32(m + 8, static_cast<std::uint32_t>(total - kLogOverhead));
  std::uint8_t* p = m + kMagicOffset;
  *p++ = static_cast<std::uint8_t>(opts_.magic);
  std::uint8_t attributes = static_cast<std::uint8_t>(opts_.codec.id);
  if (v1 && opts_.timestamp_type == TimestampType::kLogAppendTime) attributes |= kLegacyTimestampTypeBit;
  *p++ = attributes;
  if (v1) {
    // max_timestamp_ already holds log_append_time for LogAppendTime batches.
    wire::Put64(p, static_cast<std::uint64_t>(max_timestamp_));
    p += 8;
  }
  wire::Put32(p, 0xFFFFFFFFu);  // null key
  wire::Put32(p + 4, static_cast<std::uint32_t>(compressed_.size()));
  std::memcpy(p + 8, compressed_.data(), compressed_.size());
  wire::Put32(m + 12, Crc32({m + kMagicOffset, total - kMagicOffset}));
  return Status::Ok();
}

Status WriteBatch(BatchBuilder& builder, const BatchOptions& options,
                  std::span<const Record> records, ByteBuffer& out) {
  if (Status s = builder.Begin(options, out); !s) return s;
  for (const Record& r : records) {
    if (Status s = builder.Append(r); !s) return s;
  }
  return builder.Finish();
}

}  // namespace kbench::record
