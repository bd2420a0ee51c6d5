#include "harness/record/crc.h"

#include <climits>

#include <isa-l/crc.h>
#include <zlib.h>

namespace kbench::record {

namespace {
// Both libraries take an int-sized length: very large inputs go in pieces.
constexpr std::size_t kMaxChunk = std::size_t{1} << 30;
static_assert(kMaxChunk <= UINT_MAX && kMaxChunk <= INT_MAX);
}  // namespace

std::uint32_t Crc32(ByteView data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const std::uint8_t* p = data.data();
  std::size_t n = data.size();
  while (n > 0) {
    std::size_t chunk = n < kMaxChunk ? n : kMaxChunk;
    crc = crc32(crc, p, static_cast<uInt>(chunk));
    p += chunk;
    n -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

std::uint32_t Crc32c(ByteView data, std::uint32_t crc) {
  // ISA-L's crc32_iscsi works on the raw CRC register: it neither inverts the initial
  // value nor the result. The standard CRC-32C (and Kafka's) inverts both, so the
  // register carried between calls is ~crc.
  std::uint32_t reg = ~crc;
  // crc32_iscsi takes a non-const pointer but only reads through it.
  auto* p = const_cast<unsigned char*>(data.data());
  std::size_t n = data.size();
  while (n > 0) {
    std::size_t chunk = n < kMaxChunk ? n : kMaxChunk;
    reg = crc32_iscsi(p, static_cast<int>(chunk), reg);
    p += chunk;
    n -= chunk;
  }
  return ~reg;
}

}  // namespace kbench::record
