#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "harness/bytes.h"
#include "harness/record/crc.h"

namespace kbench::record {
namespace {

TEST(Crc, CheckValues) {
  // The standard check inputs of both polynomials.
  EXPECT_EQ(Crc32(AsBytes("123456789")), 0xCBF43926u);
  EXPECT_EQ(Crc32c(AsBytes("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32cPortable(AsBytes("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32c(AsBytes("")), 0u);
  EXPECT_EQ(Crc32(AsBytes("")), 0u);
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

TEST(Crc, Crc32cContinuesLikeOneCall) {
  std::mt19937_64 rng(7);
  std::vector<std::uint8_t> data(5000);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  ByteView all(data);
  for (std::size_t split : {0u, 1u, 7u, 8u, 1000u, 4999u, 5000u}) {
    std::uint32_t part = Crc32c(all.first(split));
    EXPECT_EQ(Crc32c(all.subspan(split), part), Crc32c(all)) << split;
    EXPECT_EQ(Crc32cPortable(all.subspan(split), Crc32cPortable(all.first(split))),
              Crc32cPortable(all))
        << split;
  }
}

TEST(Crc, HardwareAndPortableAgree) {
  if (!HasHardwareCrc32c()) GTEST_SKIP() << "CPU has no SSE4.2 crc32 instruction";
  std::mt19937_64 rng(42);
  // Room for every length 0..1024 at every offset 0..7, and long inputs that take the
  // three-stream paths (3 x 256 and 3 x 4096 byte blocks).
  std::vector<std::uint8_t> data(40000);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t len = 0; len <= 1024; ++len) {
      ByteView v(data.data() + offset, len);
      ASSERT_EQ(Crc32cHardware(v), Crc32cPortable(v)) << "offset " << offset << " len " << len;
    }
  }
  for (std::size_t len : {3 * 4096u - 1, 3 * 4096u, 3 * 4096u + 13, 6 * 4096u + 3 * 256 + 9, 39990u}) {
    for (std::size_t offset = 0; offset < 3; ++offset) {
      ByteView v(data.data() + offset, len);
      ASSERT_EQ(Crc32cHardware(v, 0x12345678u), Crc32cPortable(v, 0x12345678u)) << len;
    }
  }
}

}  // namespace
}  // namespace kbench::record
