// Property tests: random records written by BatchBuilder in every magic x codec read back
// identically through BatchReader (seeded, so failures reproduce).

#include <gtest/gtest.h>

#include <random>

#include "harness/record/record_codec.h"
#include "tests/record/test_util.h"

namespace kbench::record {
namespace {

using testing::CodecsFor;
using testing::Own;
using testing::RandomRecords;

struct Case {
  int magic;
  CodecSpec codec;
};

class RoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(RoundTrip, RandomBatchesReadBack) {
  const Case c = GetParam();
  BatchBuilder builder;
  BatchReader reader;
  ByteBuffer wire;
  ReadResult got;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed * 1000 + static_cast<std::uint64_t>(c.magic));
    const std::size_t count = 1 + rng() % 60;
    auto f = RandomRecords(rng, count, c.magic == 2, 1700000000000);
    BatchOptions o;
    o.magic = static_cast<std::int8_t>(c.magic);
    o.codec = c.codec;
    o.base_offset = static_cast<std::int64_t>(rng() % 1000000);
    if (c.magic > 0 && rng() % 3 == 0) {
      o.timestamp_type = TimestampType::kLogAppendTime;
      o.log_append_time = 1700000999000;
    }
    if (c.magic == 2) {
      o.partition_leader_epoch = static_cast<std::int32_t>(rng() % 50);
      o.producer_id = static_cast<std::int64_t>(rng() % 100000);
      o.producer_epoch = static_cast<std::int16_t>(rng() % 100);
      o.base_sequence = static_cast<std::int32_t>(rng() % 100000);
      o.transactional = rng() % 2 == 0;
    }
    ASSERT_TRUE(WriteBatch(builder, o, f.records, wire).message().empty());
    Status s = reader.Read(wire.view(), got);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(got.records.size(), count);
    const bool one_entry = c.magic == 2 || !c.codec.is_none();
    ASSERT_EQ(got.batches.size(), one_entry ? 1u : count);
    for (std::size_t i = 0; i < count; ++i) {
      const DecodedRecord& r = got.records[i];
      const Record& w = f.records[i];
      EXPECT_EQ(r.offset, o.base_offset + static_cast<std::int64_t>(i));
      std::int64_t want_ts = c.magic == 0                                        ? kNoTimestamp
                             : o.timestamp_type == TimestampType::kLogAppendTime ? o.log_append_time
                                                                                 : w.timestamp;
      EXPECT_EQ(r.timestamp, want_ts) << i;
      EXPECT_EQ(Own(r.key), Own(w.key)) << i;
      EXPECT_EQ(Own(r.value), Own(w.value)) << i;
      auto hs = got.headers_of(r);
      ASSERT_EQ(hs.size(), w.headers.size());
      for (std::size_t h = 0; h < hs.size(); ++h) {
        EXPECT_EQ(hs[h].key, w.headers[h].key);
        EXPECT_EQ(Own(hs[h].value), Own(w.headers[h].value));
      }
    }
    const BatchInfo& b = got.batches.front();
    EXPECT_EQ(b.magic, c.magic);
    // Read back as the codec's Kafka compression code (snappy_xerial reads as snappy).
    EXPECT_EQ(b.codec.info().kafka_attribute, c.codec.info().kafka_attribute);
    std::size_t total = 0;
    for (const BatchInfo& e : got.batches) total += e.wire_bytes;
    EXPECT_EQ(total, wire.size());
    if (c.magic == 2) {
      EXPECT_EQ(b.base_offset, o.base_offset);
      EXPECT_EQ(b.last_offset_delta, static_cast<std::int32_t>(count - 1));
      EXPECT_EQ(b.partition_leader_epoch, o.partition_leader_epoch);
      EXPECT_EQ(b.producer_id, o.producer_id);
      EXPECT_EQ(b.producer_epoch, o.producer_epoch);
      EXPECT_EQ(b.base_sequence, o.base_sequence);
      EXPECT_EQ(b.transactional, o.transactional);
      EXPECT_EQ(b.timestamp_type, o.timestamp_type);
      EXPECT_EQ(b.base_timestamp, f.records[0].timestamp);
    }
    if (one_entry && c.magic < 2) {
      // The wrapper carries the last absolute offset, for v0 and v1 alike.
      EXPECT_EQ(b.last_offset, o.base_offset + static_cast<std::int64_t>(count) - 1);
      EXPECT_EQ(got.records.back().stored_offset,
                c.magic == 0 ? o.base_offset + static_cast<std::int64_t>(count) - 1
                             : static_cast<std::int64_t>(count) - 1);
    }
  }
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (int magic = 0; magic <= 2; ++magic) {
    for (const CodecSpec& spec : CodecsFor(magic)) cases.push_back({magic, spec});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllFormats, RoundTrip, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           return testing::CaseName(p.param.magic, p.param.codec);
                         });

TEST(Writer, Lz4HeaderChecksumFollowsKafka3160) {
  BatchBuilder builder;
  ByteBuffer wire;
  Record r;
  r.timestamp = 1;
  r.value = "some value bytes";
  for (int magic = 0; magic <= 2; ++magic) {
    BatchOptions o;
    o.magic = static_cast<std::int8_t>(magic);
    o.codec = ParseCodecSpec("lz4");
    ASSERT_TRUE(WriteBatch(builder, o, {&r, 1}, wire).ok());
    // The frame is the wrapper's value (it follows the message overhead, the key being
    // null) or follows the v2 header.
    std::size_t frame_at = magic == 0   ? kMessageV0Overhead
                           : magic == 1 ? kMessageV1Overhead
                                        : kV2HeaderBytes;
    std::size_t hc = 0;
    std::uint8_t correct = 0, broken = 0;
    ASSERT_TRUE(Lz4HeaderChecksums(wire.view().subspan(frame_at), &hc, &correct, &broken));
    ASSERT_NE(correct, broken);
    EXPECT_EQ(wire.data()[frame_at + hc], magic == 0 ? broken : correct) << "magic " << magic;
  }
}

TEST(Writer, RejectsWhatTheFormatCannotCarry) {
  BatchBuilder builder;
  ByteBuffer wire;
  BatchOptions o;
  o.magic = 1;
  o.codec = ParseCodecSpec("zstd");
  EXPECT_NE(builder.Begin(o, wire).message().find("zstd"), std::string::npos);
  o.magic = 3;
  o.codec = CodecSpec{};
  EXPECT_FALSE(builder.Begin(o, wire).ok());
  o.magic = 0;
  o.timestamp_type = TimestampType::kLogAppendTime;
  EXPECT_FALSE(builder.Begin(o, wire).ok());
  o.timestamp_type = TimestampType::kCreateTime;
  ASSERT_TRUE(builder.Begin(o, wire).ok());
  Header h{"k", std::nullopt};
  Record r;
  r.headers = {&h, 1};
  EXPECT_NE(builder.Append(r).message().find("headers"), std::string::npos);
  ASSERT_TRUE(builder.Begin(o, wire).ok());
  EXPECT_FALSE(builder.Finish().ok()) << "an empty batch";
}

TEST(Writer, OverheadMatchesTheFormat) {
  Record r;
  r.timestamp = 5;
  r.key = std::nullopt;
  r.value = std::string_view("0123456789");
  EXPECT_EQ(LegacyMessageSize(0, r), 26u + 10u);
  EXPECT_EQ(LegacyMessageSize(1, r), 34u + 10u);
  // v2: length(1) attributes(1) tsDelta(1) offsetDelta(1) key(-1: 1) valueLen(1) headers(1)
  EXPECT_EQ(V2RecordSize(0, 0, r), 7u + 10u);
}

}  // namespace
}  // namespace kbench::record
