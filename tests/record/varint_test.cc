#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "harness/record/varint.h"

namespace kbench::record {
namespace {

std::vector<std::uint8_t> Enc32(std::int32_t v) {
  std::vector<std::uint8_t> b(kMaxVarint64Bytes);
  b.resize(static_cast<std::size_t>(WriteVarint(v, b.data()) - b.data()));
  return b;
}
std::vector<std::uint8_t> Enc64(std::int64_t v) {
  std::vector<std::uint8_t> b(kMaxVarint64Bytes);
  b.resize(static_cast<std::size_t>(WriteVarlong(v, b.data()) - b.data()));
  return b;
}
VarintError Dec32(const std::vector<std::uint8_t>& b, std::int32_t* v,
                  std::size_t* used = nullptr) {
  const std::uint8_t* p = b.data();
  VarintError e = ReadVarint(&p, b.data() + b.size(), v);
  if (used) *used = static_cast<std::size_t>(p - b.data());
  return e;
}
VarintError Dec64(const std::vector<std::uint8_t>& b, std::int64_t* v) {
  const std::uint8_t* p = b.data();
  return ReadVarlong(&p, b.data() + b.size(), v);
}

TEST(Varint, ZigZagEncodings) {
  // Kafka's ByteUtils examples: 0 -> 00, -1 -> 01, 1 -> 02, -64 -> 7f, 64 -> 80 01.
  EXPECT_EQ(Enc32(0), (std::vector<std::uint8_t>{0x00}));
  EXPECT_EQ(Enc32(-1), (std::vector<std::uint8_t>{0x01}));
  EXPECT_EQ(Enc32(1), (std::vector<std::uint8_t>{0x02}));
  EXPECT_EQ(Enc32(-64), (std::vector<std::uint8_t>{0x7f}));
  EXPECT_EQ(Enc32(64), (std::vector<std::uint8_t>{0x80, 0x01}));
  EXPECT_EQ(Enc32(std::numeric_limits<std::int32_t>::max()),
            (std::vector<std::uint8_t>{0xfe, 0xff, 0xff, 0xff, 0x0f}));
  EXPECT_EQ(Enc32(std::numeric_limits<std::int32_t>::min()),
            (std::vector<std::uint8_t>{0xff, 0xff, 0xff, 0xff, 0x0f}));
  EXPECT_EQ(Enc64(std::numeric_limits<std::int64_t>::min()).size(), 10u);
  EXPECT_EQ(Enc64(std::numeric_limits<std::int64_t>::max()).size(), 10u);
}

TEST(Varint, EdgeValuesRoundTrip) {
  for (std::int32_t v : {0, -1, 1, 63, -64, 64, std::numeric_limits<std::int32_t>::min(),
                         std::numeric_limits<std::int32_t>::max()}) {
    auto b = Enc32(v);
    EXPECT_EQ(b.size(), VarintSize(v));
    std::int32_t got = 0;
    std::size_t used = 0;
    ASSERT_EQ(Dec32(b, &got, &used), VarintError::kOk) << v;
    EXPECT_EQ(got, v);
    EXPECT_EQ(used, b.size());
  }
  for (std::int64_t v :
       {std::int64_t{0}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min(),
        std::numeric_limits<std::int64_t>::max(),
        std::int64_t{std::numeric_limits<std::int32_t>::min()} - 1}) {
    auto b = Enc64(v);
    EXPECT_EQ(b.size(), VarlongSize(v));
    std::int64_t got = 0;
    ASSERT_EQ(Dec64(b, &got), VarintError::kOk) << v;
    EXPECT_EQ(got, v);
  }
}

TEST(Varint, RandomRoundTrip) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    auto v = static_cast<std::int64_t>(rng() >> (rng() % 64));
    if (rng() % 2) v = -v;
    std::int64_t got = 0;
    ASSERT_EQ(Dec64(Enc64(v), &got), VarintError::kOk);
    ASSERT_EQ(got, v);
    auto v32 = static_cast<std::int32_t>(v);
    std::int32_t got32 = 0;
    ASSERT_EQ(Dec32(Enc32(v32), &got32), VarintError::kOk);
    ASSERT_EQ(got32, v32);
  }
}

TEST(Varint, TruncatedRejected) {
  std::int32_t v = 0;
  EXPECT_EQ(Dec32({}, &v), VarintError::kTruncated);
  EXPECT_EQ(Dec32({0x80}, &v), VarintError::kTruncated);
  EXPECT_EQ(Dec32({0xff, 0xff, 0xff, 0xff}, &v), VarintError::kTruncated);
  std::int64_t w = 0;
  auto b = Enc64(std::numeric_limits<std::int64_t>::min());
  b.pop_back();
  EXPECT_EQ(Dec64(b, &w), VarintError::kTruncated);
}

TEST(Varint, OverlongRejected) {
  std::int32_t v = 0;
  // Six bytes for an int32, and a fifth byte carrying bits beyond 32.
  EXPECT_EQ(Dec32({0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, &v), VarintError::kOverlong);
  EXPECT_EQ(Dec32({0xff, 0xff, 0xff, 0xff, 0x1f}, &v), VarintError::kOverlong);
  std::int64_t w = 0;
  EXPECT_EQ(Dec64({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, &w),
            VarintError::kOverlong);
  EXPECT_EQ(Dec64({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x03}, &w),
            VarintError::kOverlong);
  // Non-minimal but in range: Kafka accepts it, so do we.
  EXPECT_EQ(Dec32({0x80, 0x00}, &v), VarintError::kOk);
  EXPECT_EQ(v, 0);
}

}  // namespace
}  // namespace kbench::record
