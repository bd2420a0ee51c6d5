// Readers given truncated, oversized or corrupt input must return an error that names what
// is wrong, and never crash, loop or allocate without bound.

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "harness/record/crc.h"
#include "harness/record/varint.h"
#include "harness/record/wire.h"
#include "tests/record/test_util.h"

namespace kbench::record {
namespace {

using testing::CodecsFor;
using testing::RandomRecords;

ByteBuffer Build(int magic, const CodecSpec& codec, std::uint64_t seed, std::size_t count = 6) {
  std::mt19937_64 rng(seed);
  auto f = RandomRecords(rng, count, magic == 2, 1700000000000);
  BatchOptions o;
  o.magic = static_cast<std::int8_t>(magic);
  o.codec = codec;
  BatchBuilder builder;
  ByteBuffer out;
  Status s = WriteBatch(builder, o, f.records, out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

// Recomputes a v2 batch's CRC-32C after an edit, so the edit reaches the record parser.
void FixV2Crc(ByteBuffer& b) {
  wire::Put32(b.data() + kV2Crc, Crc32c({b.data() + kV2Attributes, b.size() - kV2Attributes}));
}

bool Contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

TEST(Corrupt, EveryTruncationFailsOrEndsOnAnEntryBoundary) {
  BatchReader reader;
  ReadResult got;
  for (int magic = 0; magic <= 2; ++magic) {
    for (const CodecSpec& codec : CodecsFor(magic)) {
      ByteBuffer full = Build(magic, codec, 11);
      ASSERT_TRUE(reader.Read(full.view(), got).ok());
      std::set<std::size_t> boundaries;
      for (const BatchInfo& b : got.batches) boundaries.insert(b.wire_offset);
      for (std::size_t len = 1; len < full.size(); ++len) {
        Status s = reader.Read(full.view().first(len), got);
        if (boundaries.count(len)) {
          EXPECT_TRUE(s.ok()) << "v" << magic << " " << codec.Name() << " len " << len;
        } else {
          ASSERT_FALSE(s.ok()) << "v" << magic << " " << codec.Name() << " len " << len;
          EXPECT_FALSE(s.message().empty());
        }
      }
    }
  }
}

TEST(Corrupt, BitFlipsInCrcCoveredBytesAreCaught) {
  BatchReader reader;
  ReadResult got;
  std::mt19937_64 rng(3);
  for (int magic = 0; magic <= 2; ++magic) {
    for (const CodecSpec& codec : CodecsFor(magic)) {
      ByteBuffer full = Build(magic, codec, 12);
      ASSERT_TRUE(reader.Read(full.view(), got).ok());
      // Covered regions: v2 from the CRC field on; v0/v1 each message from its CRC on.
      std::vector<std::pair<std::size_t, std::size_t>> covered;
      if (magic == 2) {
        covered.emplace_back(kV2Crc, full.size());
      } else {
        for (const BatchInfo& b : got.batches)
          covered.emplace_back(b.wire_offset + 12, b.wire_offset + b.wire_bytes);
      }
      for (auto [from, to] : covered) {
        for (std::size_t pos = from; pos < to; ++pos) {
          ByteBuffer bad = full;
          bad.data()[pos] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
          Status s = reader.Read(bad.view(), got);
          ASSERT_FALSE(s.ok()) << "v" << magic << " " << codec.Name() << " flip at " << pos;
          // Flipping a v0/v1 magic byte changes how the entry parses; everything else
          // must be reported as a checksum mismatch.
          if (pos != from + 4 || magic == 2) {
            EXPECT_TRUE(Contains(s, "CRC")) << s.message();
          }
        }
      }
    }
  }
}

TEST(Corrupt, LengthFieldsClaimingTooMuch) {
  BatchReader reader;
  ReadResult got;
  CodecSpec none;
  ByteBuffer v2 = Build(2, none, 5);
  ByteBuffer bad = v2;
  wire::Put32(bad.data() + kV2BatchLength, 0x7fffffffu);
  Status s = reader.Read(bad.view(), got);
  EXPECT_TRUE(Contains(s, "batchLength 2147483647 exceeds")) << s.message();
  wire::Put32(bad.data() + kV2BatchLength, 3);
  EXPECT_TRUE(Contains(reader.Read(bad.view(), got), "below the minimum"));

  bad = v2;
  wire::Put32(bad.data() + kV2RecordCount, 0x7fffffffu);
  FixV2Crc(bad);
  s = reader.Read(bad.view(), got);
  EXPECT_TRUE(Contains(s, "recordCount 2147483647 cannot fit")) << s.message();
  wire::Put32(bad.data() + kV2RecordCount, 0xffffffffu);
  FixV2Crc(bad);
  EXPECT_TRUE(Contains(reader.Read(bad.view(), got), "negative recordCount"));

  for (int magic = 0; magic <= 1; ++magic) {
    ByteBuffer legacy = Build(magic, none, 6);
    bad = legacy;
    wire::Put32(bad.data() + 8, 0x7fffffffu);
    s = reader.Read(bad.view(), got);
    EXPECT_TRUE(Contains(s, "message size 2147483647 exceeds")) << s.message();
    wire::Put32(bad.data() + 8, 0x80000000u);
    EXPECT_TRUE(Contains(reader.Read(bad.view(), got), "below the minimum"));
  }
}

TEST(Corrupt, DecompressionIsCapped) {
  // 4 MiB of zeros compresses to a few KiB; a reader capped at 1 MiB must refuse it.
  std::string zeros(4u << 20, '\0');
  Record r;
  r.timestamp = 0;
  r.value = zeros;
  BatchBuilder builder;
  ReaderOptions capped;
  capped.max_decompressed_bytes = 1u << 20;
  BatchReader reader(capped);
  ReadResult got;
  ByteBuffer wire;
  for (int magic = 0; magic <= 2; ++magic) {
    for (const CodecSpec& codec : CodecsFor(magic)) {
      if (codec.is_none()) continue;
      BatchOptions o;
      o.magic = static_cast<std::int8_t>(magic);
      o.codec = codec;
      ASSERT_TRUE(WriteBatch(builder, o, {&r, 1}, wire).ok());
      ASSERT_LT(wire.size(), 1u << 20) << codec.Name();
      Status s = reader.Read(wire.view(), got);
      ASSERT_FALSE(s.ok()) << "v" << magic << " " << codec.Name();
      EXPECT_TRUE(Contains(s, "cannot decompress")) << s.message();
    }
  }
}

// Builds a v2 batch whose records section is `records` verbatim, with a valid CRC.
ByteBuffer V2WithRecords(const std::vector<std::uint8_t>& records, std::int32_t count) {
  CodecSpec none;
  ByteBuffer b = Build(2, none, 9, 1);
  b.ResizeUninitialized(kV2HeaderBytes);
  b.Append(records.data(), records.size());
  wire::Put32(b.data() + kV2BatchLength, static_cast<std::uint32_t>(b.size() - kLogOverhead));
  wire::Put32(b.data() + kV2RecordCount, static_cast<std::uint32_t>(count));
  FixV2Crc(b);
  return b;
}

TEST(Corrupt, MalformedV2Records) {
  BatchReader reader;
  ReadResult got;
  struct Bad {
    std::vector<std::uint8_t> records;
    std::string expect;
  };
  // zigzag: 0x0c = 6, 0x0e = 7, 0x10 = 8, 0x01 = -1, 0x02 = 1, 0x03 = -2, 0x00 = 0.
  const std::vector<Bad> cases = {
      {{0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0}, "overlong varint in record length"},
      {{0x0c, 0x00, 0x00, 0x00, 0x03, 0x01, 0x00, 0x00}, "invalid key length -2"},
      {{0x0c, 0x00, 0x00, 0x00, 0x01, 0x40, 0x00, 0x00}, "value length 32 exceeds"},
      {{0x0c, 0x00, 0x00, 0x00, 0x01, 0x01, 0x7e, 0x00}, "invalid header count 63"},
      {{0x0e, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00}, "bytes after the headers"},
      {{0x10, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x01, 0x01}, "null header key"},
      {{0x10, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00}, "record length 8 exceeds"},
      {{0x0c, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00}, "1 bytes after record 1 of 1"},
      {{0x0c, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
       "varint in timestampDelta"},
  };
  for (const Bad& c : cases) {
    ByteBuffer b = V2WithRecords(c.records, 1);
    Status s = reader.Read(b.view(), got);
    EXPECT_TRUE(Contains(s, c.expect)) << "want '" << c.expect << "', got '" << s.message() << "'";
  }
}

TEST(Corrupt, RandomGarbageNeverCrashes) {
  BatchReader reader;
  ReadResult got;
  std::mt19937_64 rng(99);
  std::vector<std::uint8_t> buf;
  for (int i = 0; i < 20000; ++i) {
    buf.resize(rng() % 300);
    for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
    if (buf.size() > kMagicOffset) buf[kMagicOffset] = static_cast<std::uint8_t>(rng() % 3);
    (void)reader.Read(ByteView(buf), got);
  }
  // Mutations of valid batches get further into the parsers than pure noise.
  for (int magic = 0; magic <= 2; ++magic) {
    for (const CodecSpec& codec : CodecsFor(magic)) {
      ByteBuffer full = Build(magic, codec, 21);
      for (int i = 0; i < 300; ++i) {
        ByteBuffer bad = full;
        for (int k = 0; k < 3; ++k)
          bad.data()[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
        if (magic == 2) FixV2Crc(bad);
        (void)reader.Read(bad.view(), got);
      }
    }
  }
}

}  // namespace
}  // namespace kbench::record
