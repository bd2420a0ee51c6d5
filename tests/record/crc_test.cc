#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "harness/bytes.h"
#include "harness/record/crc.h"

namespace kbench::record {
namespace {

// Test oracle: CRC-32C straight from its definition (reflected Castagnoli polynomial,
// inverted initial value and result), one bit at a time. Slow, but obviously right and
// independent of the library under test.
std::uint32_t Crc32cBitwise(ByteView data, std::uint32_t crc = 0) {
  std::uint32_t reg = ~crc;
  for (std::uint8_t b : data) {
    reg ^= b;
    for (int i = 0; i < 8; ++i) reg = (reg & 1) ? (reg >> 1) ^ 0x82F63B78u : reg >> 1;
  }
  return ~reg;
}

std::vector<std::uint8_t> RandomBytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> data(n);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  return data;
}

TEST(Crc, CheckValues) {
  // The standard check inputs of both polynomials.
  EXPECT_EQ(Crc32(AsBytes("123456789")), 0xCBF43926u);
  EXPECT_EQ(Crc32c(AsBytes("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32cBitwise(AsBytes("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32c(AsBytes("")), 0u);
  EXPECT_EQ(Crc32(AsBytes("")), 0u);
  EXPECT_EQ(Crc32c(ByteView{}, 0x12345678u), 0x12345678u);  // nothing to add
}

TEST(Crc, Crc32cKnownVectors) {
  // RFC 3720 (iSCSI) B.4 test patterns.
  std::vector<std::uint8_t> zeros(32, 0), ones(32, 0xff), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<std::uint8_t>(i);
    dec[i] = static_cast<std::uint8_t>(31 - i);
  }
  EXPECT_EQ(Crc32c(ByteView(zeros)), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ByteView(ones)), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(ByteView(inc)), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(ByteView(dec)), 0x113FDB5Cu);
}

TEST(Crc, Crc32cMatchesDefinitionAtEveryLengthAndAlignment) {
  // Every length 0..1024 at every offset 0..7 covers the library's head/tail handling and
  // each of its small-input paths; the long lengths take its folding loops.
  std::vector<std::uint8_t> data = RandomBytes(80000, 42);
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t len = 0; len <= 1024; ++len) {
      ByteView v(data.data() + offset, len);
      ASSERT_EQ(Crc32c(v), Crc32cBitwise(v)) << "offset " << offset << " len " << len;
    }
  }
  for (std::size_t len : {4095u, 4096u, 4097u, 16384u, 65536u + 61, 79990u}) {
    for (std::size_t offset = 0; offset < 3; ++offset) {
      ByteView v(data.data() + offset, len);
      ASSERT_EQ(Crc32c(v, 0x12345678u), Crc32cBitwise(v, 0x12345678u))
          << "offset " << offset << " len " << len;
    }
  }
}

TEST(Crc, Crc32cContinuesLikeOneCall) {
  std::vector<std::uint8_t> data = RandomBytes(5000, 7);
  ByteView all(data);
  const std::uint32_t whole = Crc32cBitwise(all);
  ASSERT_EQ(Crc32c(all), whole);
  for (std::size_t split = 0; split <= all.size(); split += (split < 300 ? 1 : 97)) {
    std::uint32_t part = Crc32c(all.first(split));
    ASSERT_EQ(Crc32c(all.subspan(split), part), whole) << split;
  }
  // Many small unaligned pieces, as a caller feeding record by record would.
  std::mt19937_64 rng(9);
  std::uint32_t crc = 0;
  for (std::size_t at = 0; at < all.size();) {
    std::size_t n = std::min<std::size_t>(rng() % 70, all.size() - at);
    crc = Crc32c(all.subspan(at, n), crc);
    at += n;
  }
  EXPECT_EQ(crc, whole);
}

}  // namespace
}  // namespace kbench::record
