#include "harness/record/crc.h"

#include <array>
#include <cstring>

#include <zlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define KBENCH_X86 1
#endif

namespace kbench::record {

std::uint32_t Crc32(ByteView data) {
  // zlib takes a uInt length: feed very large inputs in pieces.
  uLong crc = crc32(0L, Z_NULL, 0);
  const std::uint8_t* p = data.data();
  std::size_t n = data.size();
  while (n > 0) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : static_cast<uInt>(n);
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

namespace {

// CRC-32C is written here by hand: Debian 12 packages no CRC-32C library.
// Reflected Castagnoli polynomial.
constexpr std::uint32_t kPoly = 0x82F63B78u;

// Slicing-by-8 tables: table[k][b] is the CRC state contribution of byte b followed by k
// zero bytes, so eight input bytes are folded with eight independent lookups.
using Tables = std::array<std::array<std::uint32_t, 256>, 8>;
constexpr Tables MakeTables() {
  Tables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][b] = c;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}
constexpr Tables kTables = MakeTables();

std::uint64_t LoadLe64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

// "Raw" functions work on the CRC register without the initial/final inversion, which
// makes them linear: raw(s, A || B) = Shift(raw(s, A), |B|) ^ raw(0, B).
std::uint32_t PortableRaw(std::uint32_t s, const std::uint8_t* p, std::size_t n) {
  while (n >= 8) {
    std::uint64_t v = LoadLe64(p) ^ s;
    s = kTables[7][v & 0xff] ^ kTables[6][(v >> 8) & 0xff] ^ kTables[5][(v >> 16) & 0xff] ^
        kTables[4][(v >> 24) & 0xff] ^ kTables[3][(v >> 32) & 0xff] ^
        kTables[2][(v >> 40) & 0xff] ^ kTables[1][(v >> 48) & 0xff] ^ kTables[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) s = (s >> 8) ^ kTables[0][(s ^ *p++) & 0xff];
  return s;
}

#ifdef KBENCH_X86

// Shifting a register over n zero bytes is linear in the register, so it is a table lookup
// per register byte. The hardware path runs three independent crc32 streams over three
// consecutive blocks (the instruction has 3-cycle latency but 1-cycle throughput) and
// joins them with these shift tables.
struct ShiftTable {
  std::array<std::array<std::uint32_t, 256>, 4> t;
  explicit ShiftTable(std::size_t zeros) {
    std::array<std::uint32_t, 32> basis{};
    static const std::uint8_t kZeros[4096] = {};
    for (int bit = 0; bit < 32; ++bit) {
      std::uint32_t s = 1u << bit;
      for (std::size_t left = zeros; left > 0;) {
        std::size_t n = left < sizeof(kZeros) ? left : sizeof(kZeros);
        s = PortableRaw(s, kZeros, n);
        left -= n;
      }
      basis[bit] = s;
    }
    for (int k = 0; k < 4; ++k) {
      for (std::uint32_t v = 0; v < 256; ++v) {
        std::uint32_t r = 0;
        for (int bit = 0; bit < 8; ++bit) {
          if (v & (1u << bit)) r ^= basis[8 * k + bit];
        }
        t[k][v] = r;
      }
    }
  }
  std::uint32_t Shift(std::uint32_t s) const {
    return t[0][s & 0xff] ^ t[1][(s >> 8) & 0xff] ^ t[2][(s >> 16) & 0xff] ^ t[3][s >> 24];
  }
};

constexpr std::size_t kLongBlock = 4096;
constexpr std::size_t kShortBlock = 256;

const ShiftTable& LongShift() {
  static const ShiftTable table(kLongBlock);
  return table;
}
const ShiftTable& ShortShift() {
  static const ShiftTable table(kShortBlock);
  return table;
}

// Three independent crc32 streams over three consecutive blocks (the instruction has a
// 3-cycle latency but issues every cycle), joined with the shift tables.
__attribute__((target("sse4.2"))) std::uint64_t ThreeWay(std::uint64_t s0, const std::uint8_t*& p,
                                                         std::size_t& n, std::size_t block,
                                                         const ShiftTable& shift) {
  while (n >= 3 * block) {
    std::uint64_t s1 = 0;
    std::uint64_t s2 = 0;
    for (std::size_t i = 0; i < block; i += 8) {
      s0 = _mm_crc32_u64(s0, LoadLe64(p + i));
      s1 = _mm_crc32_u64(s1, LoadLe64(p + block + i));
      s2 = _mm_crc32_u64(s2, LoadLe64(p + 2 * block + i));
    }
    s0 = shift.Shift(static_cast<std::uint32_t>(s0)) ^ s1;
    s0 = shift.Shift(static_cast<std::uint32_t>(s0)) ^ s2;
    p += 3 * block;
    n -= 3 * block;
  }
  return s0;
}

__attribute__((target("sse4.2"))) std::uint32_t HardwareRaw(std::uint32_t s,
                                                            const std::uint8_t* p,
                                                            std::size_t n) {
  // Align so the 8-byte loads below do not straddle cache lines.
  while (n > 0 && (reinterpret_cast<std::uintptr_t>(p) & 7) != 0) {
    s = _mm_crc32_u8(s, *p++);
    --n;
  }
  std::uint64_t s0 = s;
  if (n >= 3 * kLongBlock) s0 = ThreeWay(s0, p, n, kLongBlock, LongShift());
  if (n >= 3 * kShortBlock) s0 = ThreeWay(s0, p, n, kShortBlock, ShortShift());
  while (n >= 8) {
    s0 = _mm_crc32_u64(s0, LoadLe64(p));
    p += 8;
    n -= 8;
  }
  s = static_cast<std::uint32_t>(s0);
  while (n-- > 0) s = _mm_crc32_u8(s, *p++);
  return s;
}

bool DetectHardware() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("sse4.2")) return false;
  // Build the shift tables now, so the first timed call does not pay for them.
  (void)LongShift();
  (void)ShortShift();
  return true;
}

#endif  // KBENCH_X86

}  // namespace

bool HasHardwareCrc32c() {
#ifdef KBENCH_X86
  static const bool has = DetectHardware();
  return has;
#else
  return false;
#endif
}

std::uint32_t Crc32cPortable(ByteView data, std::uint32_t crc) {
  return ~PortableRaw(~crc, data.data(), data.size());
}

std::uint32_t Crc32cHardware(ByteView data, std::uint32_t crc) {
#ifdef KBENCH_X86
  return ~HardwareRaw(~crc, data.data(), data.size());
#else
  return Crc32cPortable(data, crc);
#endif
}

std::uint32_t Crc32c(ByteView data, std::uint32_t crc) {
  static const bool hardware = HasHardwareCrc32c();
  return hardware ? Crc32cHardware(data, crc) : Crc32cPortable(data, crc);
}

}  // namespace kbench::record
