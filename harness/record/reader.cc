#include "harness/record/reader.h"

#include <optional>
#include <string>

#include "harness/record/crc.h"
#include "harness/record/varint.h"
#include "harness/record/wire.h"

namespace kbench::record {

namespace {

Status Fail(std::size_t at, const std::string& what) {
  return Status::Error("entry at byte " + std::to_string(at) + ": " + what);
}

// Offsets and timestamps come from untrusted input: add with wrap-around rather than
// signed overflow.
std::int64_t WrapAdd(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

std::string Hex32(std::uint32_t v) {
  static const char* kDigits = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s.push_back(kDigits[(v >> shift) & 0xf]);
  return s;
}

struct LegacyMessage {
  std::int64_t offset = 0;
  std::size_t total = 0;  // wire bytes including offset and size
  std::uint32_t crc = 0;
  std::int8_t magic = 0;
  std::uint8_t attributes = 0;
  std::int64_t timestamp = kNoTimestamp;
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
};

// Reads an int32-length-prefixed byte field within [*p, end).
// Takes `len` bytes (-1 = null) at *p for a key or value whose length was just read,
// checking it against what is left of the enclosing message or record.
bool TakeNullableBytes(std::int32_t len, const std::uint8_t** p, const std::uint8_t* end,
                       std::optional<std::string_view>* out, std::string* err, const char* field,
                       const char* enclosing) {
  if (len == -1) {
    out->reset();
    return true;
  }
  if (len < -1) {
    *err = std::string("invalid ") + field + " length " + std::to_string(len);
    return false;
  }
  if (static_cast<std::size_t>(len) > static_cast<std::size_t>(end - *p)) {
    *err = std::string(field) + " length " + std::to_string(len) + " exceeds the " +
           std::to_string(end - *p) + " bytes left in the " + enclosing;
    return false;
  }
  *out = std::string_view(reinterpret_cast<const char*>(*p), static_cast<std::size_t>(len));
  *p += len;
  return true;
}

bool ReadLegacyBytes(const std::uint8_t** p, const std::uint8_t* end,
                     std::optional<std::string_view>* out, std::string* err, const char* field) {
  if (end - *p < 4) {
    *err = std::string("truncated ") + field + " length";
    return false;
  }
  std::int32_t len = wire::GetI32(*p);
  *p += 4;
  return TakeNullableBytes(len, p, end, out, err, field, "message");
}

// Parses and CRC-checks one v0/v1 message at the start of `in`.
bool ParseLegacyMessage(ByteView in, LegacyMessage* m, std::string* err) {
  if (in.size() < kLogOverhead) {
    *err = "truncated: " + std::to_string(in.size()) + " bytes, a message needs at least " +
           std::to_string(kLogOverhead) + " for offset and size";
    return false;
  }
  const std::uint8_t* base = in.data();
  m->offset = wire::GetI64(base);
  std::int32_t size = wire::GetI32(base + 8);
  if (size < static_cast<std::int32_t>(kMessageV0Overhead - kLogOverhead)) {
    *err = "message size " + std::to_string(size) + " is below the minimum of " +
           std::to_string(kMessageV0Overhead - kLogOverhead);
    return false;
  }
  if (static_cast<std::size_t>(size) > in.size() - kLogOverhead) {
    *err = "message size " + std::to_string(size) + " exceeds the " +
           std::to_string(in.size() - kLogOverhead) + " bytes present";
    return false;
  }
  m->total = kLogOverhead + static_cast<std::size_t>(size);
  m->magic = static_cast<std::int8_t>(base[kMagicOffset]);
  if (m->magic != 0 && m->magic != 1) {
    *err = "message magic " + std::to_string(m->magic) + " (expected 0 or 1)";
    return false;
  }
  const std::size_t overhead = m->magic == 0 ? kMessageV0Overhead : kMessageV1Overhead;
  if (m->total < overhead) {
    *err = "message size " + std::to_string(size) + " is below the magic " +
           std::to_string(m->magic) + " minimum of " + std::to_string(overhead - kLogOverhead);
    return false;
  }
  m->crc = wire::Get32(base + 12);
  std::uint32_t computed = Crc32({base + kMagicOffset, m->total - kMagicOffset});
  if (computed != m->crc) {
    *err = "CRC-32 mismatch (stored " + Hex32(m->crc) + ", computed " + Hex32(computed) + ")";
    return false;
  }
  const std::uint8_t* p = base + kMagicOffset + 1;
  const std::uint8_t* end = base + m->total;
  m->attributes = *p++;
  if (m->magic == 1) {
    m->timestamp = wire::GetI64(p);
    p += 8;
  } else {
    m->timestamp = kNoTimestamp;
  }
  if (!ReadLegacyBytes(&p, end, &m->key, err, "key")) return false;
  if (!ReadLegacyBytes(&p, end, &m->value, err, "value")) return false;
  if (p != end) {
    *err = std::to_string(end - p) + " bytes after the value";
    return false;
  }
  return true;
}

bool ReadVarBytes(const std::uint8_t** p, const std::uint8_t* end,
                  std::optional<std::string_view>* out, std::string* err, const char* field) {
  std::int32_t len = 0;
  VarintError e = ReadVarint(p, end, &len);
  if (e != VarintError::kOk) {
    *err = std::string(VarintErrorName(e)) + " in " + field + " length";
    return false;
  }
  return TakeNullableBytes(len, p, end, out, err, field, "record");
}

}  // namespace

Status ParseV2Record(const std::uint8_t** p, const std::uint8_t* end, DecodedRecord* record,
                     std::int64_t* timestamp_delta, std::vector<Header>& headers) {
  std::string err;
  std::int32_t length = 0;
  VarintError e = ReadVarint(p, end, &length);
  if (e != VarintError::kOk)
    return Status::Error(std::string(VarintErrorName(e)) + " in record length");
  if (length < 0) return Status::Error("negative record length " + std::to_string(length));
  if (static_cast<std::size_t>(length) > static_cast<std::size_t>(end - *p)) {
    return Status::Error("record length " + std::to_string(length) + " exceeds the " +
                         std::to_string(end - *p) + " bytes left");
  }
  const std::uint8_t* q = *p;
  const std::uint8_t* rend = q + length;
  if (q == rend) return Status::Error("empty record (no attributes byte)");
  ++q;  // record attributes: unused by every Kafka version so far
  if ((e = ReadVarlong(&q, rend, timestamp_delta)) != VarintError::kOk) {
    return Status::Error(std::string(VarintErrorName(e)) + " in timestampDelta");
  }
  std::int32_t offset_delta = 0;
  if ((e = ReadVarint(&q, rend, &offset_delta)) != VarintError::kOk) {
    return Status::Error(std::string(VarintErrorName(e)) + " in offsetDelta");
  }
  record->stored_offset = offset_delta;
  if (!ReadVarBytes(&q, rend, &record->key, &err, "key")) return Status::Error(err);
  if (!ReadVarBytes(&q, rend, &record->value, &err, "value")) return Status::Error(err);
  std::int32_t header_count = 0;
  if ((e = ReadVarint(&q, rend, &header_count)) != VarintError::kOk) {
    return Status::Error(std::string(VarintErrorName(e)) + " in header count");
  }
  // Each header takes at least two bytes, so the count is bounded by what is left; checking
  // it first keeps a hostile count from driving the loop.
  if (header_count < 0 ||
      static_cast<std::size_t>(header_count) > static_cast<std::size_t>(rend - q) / 2) {
    return Status::Error("invalid header count " + std::to_string(header_count) + " for " +
                         std::to_string(rend - q) + " bytes left in the record");
  }
  record->header_begin = static_cast<std::uint32_t>(headers.size());
  record->header_count = static_cast<std::uint32_t>(header_count);
  for (std::int32_t i = 0; i < header_count; ++i) {
    Header h;
    std::optional<std::string_view> key;
    if (!ReadVarBytes(&q, rend, &key, &err, "header key")) return Status::Error(err);
    if (!key) return Status::Error("null header key");
    h.key = *key;
    if (!ReadVarBytes(&q, rend, &h.value, &err, "header value")) return Status::Error(err);
    headers.push_back(h);
  }
  if (q != rend) {
    return Status::Error(std::to_string(rend - q) + " bytes after the headers inside the record");
  }
  *p = rend;
  return Status::Ok();
}

ByteBuffer& BatchReader::NextSectionBuffer() {
  if (sections_used_ == sections_.size()) sections_.emplace_back();
  return sections_[sections_used_++];
}

Status BatchReader::Read(ByteView data, ReadResult& result) {
  result.clear();
  sections_used_ = 0;
  std::size_t pos = 0;
  while (pos < data.size()) {
    ByteView rest = data.subspan(pos);
    if (rest.size() <= kMagicOffset) {
      return Fail(pos, "truncated: " + std::to_string(rest.size()) +
                           " bytes, too few to hold an entry's offset, size and magic");
    }
    std::int8_t magic = static_cast<std::int8_t>(rest[kMagicOffset]);
    std::size_t before = result.batches.size();
    Status s = magic == 2 ? ReadV2(rest, pos, result) : ReadLegacy(rest, pos, result);
    if (!s) return s;
    pos += result.batches[before].wire_bytes;
  }
  return Status::Ok();
}

Status BatchReader::ReadV2(ByteView in, std::size_t at, ReadResult& result) {
  if (in.size() < kV2HeaderBytes) {
    return Fail(at, "truncated v2 batch header: " + std::to_string(in.size()) + " of " +
                        std::to_string(kV2HeaderBytes) + " bytes");
  }
  const std::uint8_t* h = in.data();
  std::int32_t length = wire::GetI32(h + kV2BatchLength);
  if (length < static_cast<std::int32_t>(kV2HeaderBytes - kLogOverhead)) {
    return Fail(at, "batchLength " + std::to_string(length) + " is below the minimum of " +
                        std::to_string(kV2HeaderBytes - kLogOverhead));
  }
  if (static_cast<std::size_t>(length) > in.size() - kLogOverhead) {
    return Fail(at, "batchLength " + std::to_string(length) + " exceeds the " +
                        std::to_string(in.size() - kLogOverhead) + " bytes present");
  }
  BatchInfo b;
  b.wire_offset = at;
  b.wire_bytes = kLogOverhead + static_cast<std::size_t>(length);
  b.magic = 2;
  b.crc = wire::Get32(h + kV2Crc);
  std::uint32_t computed = Crc32c({h + kV2Attributes, b.wire_bytes - kV2Attributes});
  if (computed != b.crc) {
    return Fail(
        at, "v2 CRC-32C mismatch (stored " + Hex32(b.crc) + ", computed " + Hex32(computed) + ")");
  }
  b.attributes = wire::Get16(h + kV2Attributes);
  auto codec = static_cast<unsigned>(b.attributes & kV2CodecMask);
  std::optional<CodecSpec> spec = CodecSpecForKafkaAttribute(codec);
  if (!spec) {
    return Fail(at, "unknown compression codec id " + std::to_string(codec) + " in attributes");
  }
  b.codec = *spec;
  b.timestamp_type = (b.attributes & kV2TimestampTypeBit) ? TimestampType::kLogAppendTime
                                                          : TimestampType::kCreateTime;
  b.transactional = (b.attributes & kV2TransactionalBit) != 0;
  b.control = (b.attributes & kV2ControlBit) != 0;
  b.base_offset = wire::GetI64(h + kV2BaseOffset);
  b.partition_leader_epoch = wire::GetI32(h + kV2PartitionLeaderEpoch);
  b.last_offset_delta = wire::GetI32(h + kV2LastOffsetDelta);
  b.last_offset = WrapAdd(b.base_offset, b.last_offset_delta);
  b.base_timestamp = wire::GetI64(h + kV2BaseTimestamp);
  b.max_timestamp = wire::GetI64(h + kV2MaxTimestamp);
  b.producer_id = wire::GetI64(h + kV2ProducerId);
  b.producer_epoch = wire::GetI16(h + kV2ProducerEpoch);
  b.base_sequence = wire::GetI32(h + kV2BaseSequence);
  std::int32_t count = wire::GetI32(h + kV2RecordCount);
  if (count < 0) return Fail(at, "negative recordCount " + std::to_string(count));

  ByteView section = in.subspan(kV2HeaderBytes, b.wire_bytes - kV2HeaderBytes);
  if (!b.codec.is_none()) {
    ByteBuffer& buf = NextSectionBuffer();
    Status s = codecs_.Decompress(2, b.codec, section, buf, options_.max_decompressed_bytes);
    if (!s) return Fail(at, "cannot decompress " + b.codec.Name() + " records: " + s.message());
    section = buf.view();
  }
  b.uncompressed_bytes = section.size();
  // The smallest record takes 7 bytes, so a count beyond size/7 is a lie; checking it
  // here bounds the work and the records vector by the section's real size.
  if (static_cast<std::size_t>(count) > section.size() / 7) {
    return Fail(at, "recordCount " + std::to_string(count) + " cannot fit in " +
                        std::to_string(section.size()) + " bytes of records");
  }
  b.first_record = result.records.size();
  b.record_count = static_cast<std::size_t>(count);
  const std::uint8_t* p = section.data();
  const std::uint8_t* end = p + section.size();
  const bool log_append = b.timestamp_type == TimestampType::kLogAppendTime;
  for (std::int32_t i = 0; i < count; ++i) {
    DecodedRecord r;
    std::int64_t ts_delta = 0;
    Status s = ParseV2Record(&p, end, &r, &ts_delta, result.headers);
    if (!s) {
      return Fail(
          at, "record " + std::to_string(i) + " of " + std::to_string(count) + ": " + s.message());
    }
    r.offset = WrapAdd(b.base_offset, r.stored_offset);
    r.timestamp = log_append ? b.max_timestamp : WrapAdd(b.base_timestamp, ts_delta);
    result.records.push_back(r);
  }
  if (p != end) {
    return Fail(at, std::to_string(end - p) + " bytes after record " + std::to_string(count) +
                        " of " + std::to_string(count));
  }
  result.batches.push_back(b);
  return Status::Ok();
}

Status BatchReader::ReadLegacy(ByteView in, std::size_t at, ReadResult& result) {
  LegacyMessage m;
  std::string err;
  if (!ParseLegacyMessage(in, &m, &err)) return Fail(at, err);
  BatchInfo b;
  b.wire_offset = at;
  b.wire_bytes = m.total;
  b.magic = m.magic;
  b.crc = m.crc;
  b.attributes = m.attributes;
  auto codec = static_cast<unsigned>(m.attributes & kLegacyCodecMask);
  std::optional<CodecSpec> spec = CodecSpecForKafkaAttribute(codec);
  if (!spec || spec->info().first_magic > m.magic) {
    return Fail(at, "codec id " + std::to_string(codec) + " is not valid for magic " +
                        std::to_string(m.magic));
  }
  b.codec = *spec;
  b.timestamp_type = (m.magic == 1 && (m.attributes & kLegacyTimestampTypeBit))
                         ? TimestampType::kLogAppendTime
                         : TimestampType::kCreateTime;
  b.base_offset = m.offset;
  b.last_offset = m.offset;
  b.max_timestamp = m.timestamp;
  b.first_record = result.records.size();

  if (b.codec.is_none()) {
    DecodedRecord r;
    r.offset = r.stored_offset = m.offset;
    r.timestamp = m.timestamp;
    r.key = m.key;
    r.value = m.value;
    b.record_count = 1;
    b.uncompressed_bytes = m.total;
    result.records.push_back(r);
    result.batches.push_back(b);
    return Status::Ok();
  }

  if (!m.value) return Fail(at, "compressed wrapper message has a null value");
  ByteBuffer& buf = NextSectionBuffer();
  Status s =
      codecs_.Decompress(m.magic, b.codec, AsBytes(*m.value), buf, options_.max_decompressed_bytes);
  if (!s) return Fail(at, "cannot decompress " + b.codec.Name() + " wrapper: " + s.message());
  b.uncompressed_bytes = buf.size();
  ByteView inner = buf.view();
  std::size_t pos = 0;
  while (pos < inner.size()) {
    LegacyMessage im;
    std::string what;
    auto where = [&] {
      return "inner message " + std::to_string(result.records.size() - b.first_record) +
             " at byte " + std::to_string(pos) + " of the decompressed set: ";
    };
    if (!ParseLegacyMessage(inner.subspan(pos), &im, &what)) return Fail(at, where() + what);
    if (im.magic != m.magic) {
      return Fail(at, where() + "magic " + std::to_string(im.magic) +
                          " differs from the wrapper's " + std::to_string(m.magic));
    }
    if ((im.attributes & kLegacyCodecMask) != 0) return Fail(at, where() + "nested compression");
    DecodedRecord r;
    r.offset = r.stored_offset = im.offset;
    r.timestamp = im.timestamp;
    r.key = im.key;
    r.value = im.value;
    result.records.push_back(r);
    pos += im.total;
  }
  b.record_count = result.records.size() - b.first_record;
  if (b.record_count == 0) return Fail(at, "compressed wrapper holds no messages");
  if (m.magic == 1) {
    // KIP-31: inner offsets are relative; the wrapper holds the last absolute offset.
    std::int64_t last_inner = result.records.back().stored_offset;
    for (std::size_t i = b.first_record; i < result.records.size(); ++i) {
      DecodedRecord& r = result.records[i];
      r.offset = static_cast<std::int64_t>(static_cast<std::uint64_t>(m.offset) -
                                           static_cast<std::uint64_t>(last_inner) +
                                           static_cast<std::uint64_t>(r.stored_offset));
      if (b.timestamp_type == TimestampType::kLogAppendTime) r.timestamp = m.timestamp;
    }
  }
  b.base_offset = result.records[b.first_record].offset;
  b.last_offset = result.records.back().offset;
  result.batches.push_back(b);
  return Status::Ok();
}

}  // namespace kbench::record
