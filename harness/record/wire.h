#pragma once

// Big-endian field access for Kafka's fixed-width fields (internal to harness/record).

#include <cstdint>
#include <cstring>

namespace kbench::record::wire {

inline void Put16(std::uint8_t* p, std::uint16_t v) {
  v = __builtin_bswap16(v);
  std::memcpy(p, &v, 2);
}
inline void Put32(std::uint8_t* p, std::uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void Put64(std::uint8_t* p, std::uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline std::uint16_t Get16(const std::uint8_t* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return __builtin_bswap16(v);
}
inline std::uint32_t Get32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline std::uint64_t Get64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline std::int16_t GetI16(const std::uint8_t* p) { return static_cast<std::int16_t>(Get16(p)); }
inline std::int32_t GetI32(const std::uint8_t* p) { return static_cast<std::int32_t>(Get32(p)); }
inline std::int64_t GetI64(const std::uint8_t* p) { return static_cast<std::int64_t>(Get64(p)); }

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "wire.h assumes a little-endian host");

}  // namespace kbench::record::wire
