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

// The fields of v2 records for a batch that is CRC'd as it is written: bytes computed here
// (varints, the attributes byte) gather in two registers and go to the copier with the
// field contents that follow them, which are copied from the caller's memory. Bytes still
// pending at the end of a record (the header count) carry over to the next one.
class FusedV2Fields {
 public:
  // p: where the record goes; pending bytes belong just before it. They are worked on in
  // a local copy (registers), and saved back by Done.
  FusedV2Fields(Crc32cCopier& copier, std::uint8_t* p, const PendingBytes& pending)
      : copier_(copier), q_(pending), p_(p - pending.n) {}
  void Done(PendingBytes& pending) const { pending = q_; }

  void Byte(std::uint8_t b) { Put(b, 1); }
  void Varint(std::int32_t v) { PutUnsigned(ZigZag32(v)); }
  void Varlong(std::int64_t v) { PutUnsigned(ZigZag64(v)); }
  void VarBytes(const std::optional<std::string_view>& s) {
    if (!s) {
      Varint(-1);
      return;
    }
    Varint(static_cast<std::int32_t>(s->size()));
    if (s->empty()) return;
    copier_.Append(q_.lo, q_.hi, q_.n, s->data(), s->size(), p_);
    p_ += q_.n + s->size();
    q_ = {};
  }

 private:
  // The varint encoding of u, as WriteUnsignedVarint writes it, in at most two Puts.
  void PutUnsigned(std::uint64_t u) {
    if (u >> 56 != 0) {  // over 8 bytes: the first 8 carry 56 bits, all with continuation
      std::uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits |= (((u >> (7 * i)) & 0x7F) | 0x80) << (8 * i);
      Put(bits, 8);
      u >>= 56;
    }
    std::uint64_t bits = 0;
    unsigned len = 0;
    while (u >= 0x80) {
      bits |= ((u & 0x7F) | 0x80) << (8 * len);
      u >>= 7;
      ++len;
    }
    Put(bits | (u << (8 * len)), len + 1);
  }
  // Appends len <= 8 bytes (bits, little-endian) to the pending ones.
  void Put(std::uint64_t bits, unsigned len) {
    PendingBytes& q = q_;
    if (q.n + len > 16) {
      copier_.Append(q.lo, q.hi, q.n, nullptr, 0, p_);
      p_ += q.n;
      q = {};
    }
    if (q.n < 8) {
      q.lo |= bits << (8 * q.n);
      if (q.n + len > 8) q.hi |= bits >> (8 * (8 - q.n));
    } else {
      q.hi |= bits << (8 * (q.n - 8));
    }
    q.n += len;
  }

  Crc32cCopier& copier_;
  PendingBytes q_;
  std::uint8_t* p_;  // where the pending bytes go
};

constexpr std::size_t kMaxField =
    static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());

bool TooLong(const std::optional<std::string_view>& s) { return s && s->size() > kMaxField / 2; }

// The varint of u < 2^21 (at most 3 bytes) and its length, without loops or branches: each
// 7-bit group moved to its byte, then continuation bits on all but the last byte. Every
// field of a plain record below 1 MiB fits (sizes, deltas under 2^20).
struct SmallVarint {
  std::uint64_t bits;
  std::size_t len;
};
constexpr SmallVarint SpreadSmallVarint(std::uint32_t u) {
  const std::size_t len = 1 + (u >= (1u << 7)) + (u >= (1u << 14));
  const std::uint64_t groups = (u & 0x7F) | ((u << 1) & 0x7F00) | ((u << 2) & 0x7F0000);
  return {groups | (0x8080 & ((std::uint64_t{1} << (8 * (len - 1))) - 1)), len};
}

static_assert(SpreadSmallVarint(1).bits == 0x01 && SpreadSmallVarint(1).len == 1);
static_assert(SpreadSmallVarint(300).bits == 0x02AC && SpreadSmallVarint(300).len == 2);
static_assert(SpreadSmallVarint((1u << 21) - 1).bits == 0x7FFFFF);
static_assert(SpreadSmallVarint((1u << 21) - 1).len == 3);

constexpr std::uint64_t kSmallVarintLimit = std::uint64_t{1} << 21;

// GCC's and Clang's 128-bit integer, used once per record to join two register halves.
__extension__ typedef unsigned __int128 U128;

// The bytes of a plain v2 record (no headers; null or empty key) that come before its
// value, with the bytes still pending from the previous record in front: all computed, so
// they go to the copier from registers together with the value.
struct PlainPrefix {
  std::uint64_t lo;  // bytes 0-7, little-endian
  std::uint64_t hi;  // bytes 8-15
  std::size_t n;
  // Where the timestamp and offset deltas are (bit shift) and how long (bytes), so that
  // PrefixShape can patch them for the next record.
  unsigned ts_shift;
  unsigned off_shift;
  std::size_t ts_len;
  std::size_t off_len;
};

// False when the record is not plain, has a field of 2^21 or more (a value or a delta of
// about a million), or follows more than one pending byte; the caller then takes the
// general path. Kept to a few dozen operations, as it runs for every record: the prefix is
// built in two 64-bit halves (pending byte, length, attributes, timestamp delta; offset
// delta, key and value lengths), each at most 8 bytes by the limits checked first.
bool EncodePlainPrefix(const Record& r, std::int64_t ts_delta, std::int64_t offset_delta,
                       const PendingBytes& pending, PlainPrefix& out) {
  if (!r.headers.empty() || (r.key && !r.key->empty()) || pending.n > 1) return false;
  const std::uint64_t ts = ZigZag64(ts_delta);
  const std::uint64_t off = ZigZag64(offset_delta);
  const std::size_t value_bytes = r.value ? r.value->size() : 0;
  const std::uint64_t value = r.value ? 2 * std::uint64_t{value_bytes} : 1;  // ZigZag32; null: -1
  if ((ts | off | value) >= kSmallVarintLimit) return false;
  const SmallVarint ts_v = SpreadSmallVarint(static_cast<std::uint32_t>(ts));
  const SmallVarint off_v = SpreadSmallVarint(static_cast<std::uint32_t>(off));
  const SmallVarint value_v = SpreadSmallVarint(static_cast<std::uint32_t>(value));
  // attributes, deltas, key length, value length and bytes, header count
  const std::size_t body = 1 + ts_v.len + off_v.len + 1 + value_v.len + value_bytes + 1;
  const std::uint64_t size = 2 * std::uint64_t{body};  // ZigZag32 of a positive length
  if (size >= kSmallVarintLimit) return false;
  const SmallVarint size_v = SpreadSmallVarint(static_cast<std::uint32_t>(size));
  const std::size_t lo_n = pending.n + size_v.len + 1 + ts_v.len;  // <= 8
  const std::size_t hi_n = off_v.len + 1 + value_v.len;            // <= 7
  const std::uint64_t key = r.key ? 0 : 1;  // ZigZag32 of the key length: 0, or -1 for null
  // (the attributes byte, 0, is left as it is)
  const std::uint64_t lo =
      pending.lo | size_v.bits << (8 * pending.n) | ts_v.bits << (8 * (pending.n + size_v.len + 1));
  const std::uint64_t hi =
      off_v.bits | key << (8 * off_v.len) | value_v.bits << (8 * (off_v.len + 1));
  const U128 bits = lo | static_cast<U128>(hi) << (8 * lo_n);
  out = {static_cast<std::uint64_t>(bits),
         static_cast<std::uint64_t>(bits >> 64),
         lo_n + hi_n,
         static_cast<unsigned>(8 * (pending.n + size_v.len + 1)),
         static_cast<unsigned>(8 * lo_n),
         ts_v.len,
         off_v.len};
  return true;
}

// The prefix of the last plain record with its two deltas blanked out. The next record
// usually differs only in those (same value size, deltas of the same varint length), and
// then its prefix is this one with two varints put in: a few operations instead of
// EncodePlainPrefix's few dozen, per record.
class PrefixShape {
 public:
  // Remembers pre, the prefix of record r, if r's pending byte was the usual one (the
  // previous record's header count).
  void Learn(const Record& r, const PendingBytes& pending, const PlainPrefix& pre) {
    valid_ = pending.n == 1 && pending.lo == 0;
    if (!valid_) return;
    value_bytes_ = r.value ? r.value->size() : 0;
    null_value_ = !r.value;
    null_key_ = !r.key;
    ts_shift_ = pre.ts_shift;
    off_shift_ = pre.off_shift;
    ts_len_ = pre.ts_len;
    off_len_ = pre.off_len;
    n_ = pre.n;
    const U128 ts_mask = ((U128{1} << (8 * ts_len_)) - 1) << ts_shift_;
    const U128 off_mask = ((U128{1} << (8 * off_len_)) - 1) << off_shift_;
    base_ = (pre.lo | static_cast<U128>(pre.hi) << 64) & ~(ts_mask | off_mask);
  }
  // The prefix of r, when it has the remembered shape.
  bool Apply(const Record& r, std::int64_t ts_delta, std::int64_t offset_delta,
             const PendingBytes& pending, PlainPrefix& out) const {
    if (!valid_ || pending.n != 1 || pending.lo != 0 || !r.headers.empty() || !r.key != null_key_ ||
        (r.key && !r.key->empty()) || !r.value != null_value_ ||
        (r.value ? r.value->size() : 0) != value_bytes_) {
      return false;
    }
    const std::uint64_t ts = ZigZag64(ts_delta);
    const std::uint64_t off = ZigZag64(offset_delta);
    if ((ts | off) >= kSmallVarintLimit) return false;
    const SmallVarint ts_v = SpreadSmallVarint(static_cast<std::uint32_t>(ts));
    const SmallVarint off_v = SpreadSmallVarint(static_cast<std::uint32_t>(off));
    if (ts_v.len != ts_len_ || off_v.len != off_len_) return false;
    const U128 bits = base_ | static_cast<U128>(ts_v.bits) << ts_shift_ |
                      static_cast<U128>(off_v.bits) << off_shift_;
    out = {static_cast<std::uint64_t>(bits),
           static_cast<std::uint64_t>(bits >> 64),
           n_,
           ts_shift_,
           off_shift_,
           ts_len_,
           off_len_};
    return true;
  }

 private:
  U128 base_ = 0;
  std::size_t value_bytes_ = 0;
  std::size_t n_ = 0;
  std::size_t ts_len_ = 0;
  std::size_t off_len_ = 0;
  unsigned ts_shift_ = 0;
  unsigned off_shift_ = 0;
  bool null_value_ = false;
  bool null_key_ = false;
  bool valid_ = false;
};

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
    return Status::Error("unsupported magic " + std::to_string(options.magic) +
                         " (valid: 0, 1, 2)");
  }
  if (options.codec.row >= CodecTable().size()) {
    return Status::Error("unknown codec row " + std::to_string(options.codec.row));
  }
  const CodecInfo& codec = options.codec.info();
  if (!codec.kafka_attribute) {
    return Status::Error("Kafka has no compression code for " + options.codec.Name());
  }
  if (options.magic < codec.first_magic) {
    return Status::Error(options.codec.Name() + " needs magic " +
                         std::to_string(codec.first_magic) + "; got magic " +
                         std::to_string(options.magic));
  }
  if (options.magic == 0 && options.timestamp_type == TimestampType::kLogAppendTime) {
    return Status::Error("magic 0 has no timestamps, so no LogAppendTime");
  }
  opts_ = options;
  out_ = &out;
  compressing_ = !options.codec.is_none();
  count_ = 0;
  base_timestamp_ = kNoTimestamp;
  max_timestamp_ = kNoTimestamp;
  out.clear();
  raw_.clear();
  target_ = compressing_ ? &raw_ : &out;
  // Uncompressed v2 records are copied and CRC'd in one pass as they are written. The
  // header fields the CRC starts with are only known at Finish, which combines their CRC
  // with the records'.
  fused_crc_ = options.magic == 2 && !compressing_ && copier_.fused();
  if (fused_crc_) copier_.Reset();
  pending_ = {};
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
  if (fused_crc_) {
    FusedV2Fields f(copier_, t.data() + old, pending_);
    f.Varint(static_cast<std::int32_t>(body));
    f.Byte(0);  // record attributes: unused
    f.Varlong(ts_delta);
    f.Varint(static_cast<std::int32_t>(offset_delta));
    f.VarBytes(r.key);
    f.VarBytes(r.value);
    f.Varint(static_cast<std::int32_t>(r.headers.size()));
    for (const Header& h : r.headers) {
      f.VarBytes(h.key);
      f.VarBytes(h.value);
    }
    f.Done(pending_);
    max_timestamp_ = std::max(max_timestamp_, r.timestamp);
    ++count_;
    return Status::Ok();
  }
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

Status BatchBuilder::Append(std::span<const Record> records) {
  if (!started_ || !fused_crc_) {
    for (const Record& r : records) {
      if (Status s = Append(r); !s) return s;
    }
    return Status::Ok();
  }
  // Plain records are encoded a chunk ahead of copying: their prefixes are computed while
  // no copy waits on them, then one copier call copies and CRCs the whole chunk. Other
  // records (headers, keys, very long deltas) and errors go through Append(record), after
  // the chunk before them.
  constexpr std::size_t kChunk = 32;
  Crc32cCopier::Piece pieces[kChunk];  // uninitialised: only the first `chunk` are read
  std::size_t chunk = 0;
  std::size_t chunk_start = 0;  // where the chunk's bytes go (pending bytes included)
  std::size_t chunk_bytes = 0;
  PrefixShape shape;
  auto flush = [&] {
    if (chunk == 0) return;
    // The size covers the bytes still pending too, as after Append(record).
    target_->ResizeUninitialized(chunk_start + chunk_bytes + pending_.n);
    copier_.AppendPieces(pieces, chunk, target_->data() + chunk_start);
    chunk = 0;
  };
  for (const Record& r : records) {
    if (chunk == kChunk) flush();
    const std::int64_t base = count_ == 0 ? r.timestamp : base_timestamp_;
    // (EncodePlainPrefix's limits, fields under 2^20, also keep out every record that
    // Append(record) would reject.)
    PlainPrefix pre;
    const std::int64_t ts_delta = r.timestamp - base;
    const auto offset_delta = static_cast<std::int64_t>(count_);
    if (shape.Apply(r, ts_delta, offset_delta, pending_, pre) ||
        (EncodePlainPrefix(r, ts_delta, offset_delta, pending_, pre) &&
         (shape.Learn(r, pending_, pre), true))) {
      const std::size_t value_bytes = r.value ? r.value->size() : 0;
      if (chunk == 0) {
        chunk_start = target_->size() - pending_.n;
        chunk_bytes = 0;
      }
      pieces[chunk++] = {pre.lo, pre.hi, pre.n, r.value ? r.value->data() : nullptr, value_bytes};
      chunk_bytes += pre.n + value_bytes;
      pending_ = {0, 0, 1};  // the header count (0), written by the next piece or Finish
      if (count_ == 0) base_timestamp_ = r.timestamp;  // as MemoryRecordsBuilder does
      max_timestamp_ = std::max(max_timestamp_, r.timestamp);
      ++count_;
      continue;
    }
    flush();
    if (Status s = Append(r); !s) return s;
  }
  flush();
  return Status::Ok();
}

Status BatchBuilder::AppendLegacy(const Record& r) {
  if (!r.headers.empty()) {
    return Status::Error("magic " + std::to_string(opts_.magic) + " cannot carry record headers");
  }
  const bool v1 = opts_.magic == 1;
  std::int64_t timestamp = r.timestamp;
  if (v1 && opts_.timestamp_type == TimestampType::kLogAppendTime)
    timestamp = opts_.log_append_time;
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
  if (v1 && opts_.timestamp_type == TimestampType::kLogAppendTime)
    attributes |= kLegacyTimestampTypeBit;
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
  if (out.size() - kLogOverhead > kMaxField)
    return Status::Error("batch exceeds Kafka's int32 size");
  std::uint8_t* h = out.data();
  std::uint16_t attributes = *opts_.codec.info().kafka_attribute;
  std::int64_t max_timestamp = max_timestamp_;
  if (opts_.timestamp_type == TimestampType::kLogAppendTime) {
    attributes |= kV2TimestampTypeBit;
    max_timestamp = opts_.log_append_time;
  }
  if (opts_.transactional) attributes |= kV2TransactionalBit;
  if (opts_.control) attributes |= kV2ControlBit;
  wire::Put64(h + kV2BaseOffset, static_cast<std::uint64_t>(opts_.base_offset));
  wire::Put32(h + kV2BatchLength, static_cast<std::uint32_t>(out.size() - kLogOverhead));
  wire::Put32(h + kV2PartitionLeaderEpoch,
              static_cast<std::uint32_t>(opts_.partition_leader_epoch));
  h[kV2Magic] = 2;
  wire::Put16(h + kV2Attributes, attributes);
  wire::Put32(h + kV2LastOffsetDelta, static_cast<std::uint32_t>(count_ - 1));
  wire::Put64(h + kV2BaseTimestamp, static_cast<std::uint64_t>(base_timestamp_));
  wire::Put64(h + kV2MaxTimestamp, static_cast<std::uint64_t>(max_timestamp));
  wire::Put64(h + kV2ProducerId, static_cast<std::uint64_t>(opts_.producer_id));
  wire::Put16(h + kV2ProducerEpoch, static_cast<std::uint16_t>(opts_.producer_epoch));
  wire::Put32(h + kV2BaseSequence, static_cast<std::uint32_t>(opts_.base_sequence));
  wire::Put32(h + kV2RecordCount, static_cast<std::uint32_t>(count_));
  std::uint32_t crc;
  if (fused_crc_) {
    copier_.Append(pending_.lo, pending_.hi, pending_.n, nullptr, 0,
                   out.data() + out.size() - pending_.n);
    pending_ = {};
    std::uint32_t header_crc = Crc32c({h + kV2Attributes, kV2HeaderBytes - kV2Attributes});
    crc = Crc32cCombine(header_crc, copier_.Finish(), copier_.size());
  } else {
    crc = Crc32c({h + kV2Attributes, out.size() - kV2Attributes});
  }
  wire::Put32(h + kV2Crc, crc);
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
  wire::Put64(
      m, static_cast<std::uint64_t>(opts_.base_offset + static_cast<std::int64_t>(count_) - 1));
  wire::Put32(m + 8, static_cast<std::uint32_t>(total - kLogOverhead));
  std::uint8_t* p = m + kMagicOffset;
  *p++ = static_cast<std::uint8_t>(opts_.magic);
  std::uint8_t attributes = *opts_.codec.info().kafka_attribute;
  if (v1 && opts_.timestamp_type == TimestampType::kLogAppendTime)
    attributes |= kLegacyTimestampTypeBit;
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
  if (Status s = builder.Append(records); !s) return s;
  return builder.Finish();
}

}  // namespace kbench::record
