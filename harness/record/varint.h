#pragma once

// Kafka's variable-length integers (KIP-98, protobuf style): zigzag-mapped, then
// little-endian base-128 with a continuation bit. Used by every v2 record field.
//
// Decoding is bounds-checked: it never reads past `end`, and rejects encodings longer than
// the type allows (5 bytes for int32, 10 for int64) or whose last byte carries bits beyond
// the type's width. Non-minimal but in-range encodings (e.g. 0x80 0x00 for 0) are accepted,
// as Kafka's ByteUtils.readVarint accepts them.

#include <cstddef>
#include <cstdint>

namespace kbench::record {

inline constexpr std::size_t kMaxVarint32Bytes = 5;
inline constexpr std::size_t kMaxVarint64Bytes = 10;

constexpr std::uint32_t ZigZag32(std::int32_t v) {
  return (static_cast<std::uint32_t>(v) << 1) ^ static_cast<std::uint32_t>(v >> 31);
}
constexpr std::uint64_t ZigZag64(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
constexpr std::int32_t UnZigZag32(std::uint32_t v) {
  return static_cast<std::int32_t>((v >> 1) ^ (~(v & 1) + 1));
}
constexpr std::int64_t UnZigZag64(std::uint64_t v) {
  return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

// Bytes the zigzag encoding of v takes on the wire.
constexpr std::size_t UnsignedVarintSize(std::uint64_t u) {
  std::size_t n = 1;
  while (u >= 0x80) {
    u >>= 7;
    ++n;
  }
  return n;
}
constexpr std::size_t VarintSize(std::int32_t v) { return UnsignedVarintSize(ZigZag32(v)); }
constexpr std::size_t VarlongSize(std::int64_t v) { return UnsignedVarintSize(ZigZag64(v)); }

// Writes the encoding at p (room for kMaxVarint64Bytes is the caller's job); returns the
// byte after it.
inline std::uint8_t* WriteUnsignedVarint(std::uint64_t u, std::uint8_t* p) {
  while (u >= 0x80) {
    *p++ = static_cast<std::uint8_t>(u | 0x80);
    u >>= 7;
  }
  *p++ = static_cast<std::uint8_t>(u);
  return p;
}
inline std::uint8_t* WriteVarint(std::int32_t v, std::uint8_t* p) {
  return WriteUnsignedVarint(ZigZag32(v), p);
}
inline std::uint8_t* WriteVarlong(std::int64_t v, std::uint8_t* p) {
  return WriteUnsignedVarint(ZigZag64(v), p);
}

enum class VarintError { kOk, kTruncated, kOverlong };

// Reads an unsigned base-128 value of at most `max_bytes` bytes holding at most `bits` bits.
// On success advances *p.
inline VarintError ReadUnsignedVarint(const std::uint8_t** p, const std::uint8_t* end,
                                      std::size_t max_bytes, unsigned bits, std::uint64_t* out) {
  const std::uint8_t* q = *p;
  std::uint64_t result = 0;
  for (std::size_t i = 0; i < max_bytes; ++i) {
    if (q == end) return VarintError::kTruncated;
    std::uint8_t b = *q++;
    unsigned shift = static_cast<unsigned>(7 * i);
    std::uint64_t chunk = b & 0x7f;
    // The last permitted byte may only carry the bits that remain in the type.
    if (i + 1 == max_bytes && (b & 0x80 || (chunk >> (bits - shift)) != 0)) {
      return VarintError::kOverlong;
    }
    result |= chunk << shift;
    if ((b & 0x80) == 0) {
      *p = q;
      *out = result;
      return VarintError::kOk;
    }
  }
  return VarintError::kOverlong;  // unreachable: the last byte's check returns first
}

inline VarintError ReadVarint(const std::uint8_t** p, const std::uint8_t* end, std::int32_t* out) {
  std::uint64_t u = 0;
  VarintError e = ReadUnsignedVarint(p, end, kMaxVarint32Bytes, 32, &u);
  if (e == VarintError::kOk) *out = UnZigZag32(static_cast<std::uint32_t>(u));
  return e;
}
inline VarintError ReadVarlong(const std::uint8_t** p, const std::uint8_t* end, std::int64_t* out) {
  std::uint64_t u = 0;
  VarintError e = ReadUnsignedVarint(p, end, kMaxVarint64Bytes, 64, &u);
  if (e == VarintError::kOk) *out = UnZigZag64(u);
  return e;
}

inline const char* VarintErrorName(VarintError e) {
  switch (e) {
    case VarintError::kOk:
      return "ok";
    case VarintError::kTruncated:
      return "truncated varint";
    case VarintError::kOverlong:
      return "overlong varint";
  }
  return "?";
}

}  // namespace kbench::record
