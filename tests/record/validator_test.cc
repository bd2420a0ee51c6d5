// The broker-side validation model: what each format makes the broker rewrite.

#include <gtest/gtest.h>

#include <random>

#include "harness/record/crc.h"
#include "harness/record/validator.h"
#include "harness/record/wire.h"
#include "tests/record/test_util.h"

namespace kbench::record {
namespace {

using testing::CodecsFor;
using testing::Own;
using testing::RandomRecords;

struct Produced {
  testing::RecordFixture f;
  ByteBuffer wire;
};

Produced Produce(int magic, const CodecSpec& codec, std::size_t count = 8) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(magic) * 31 +
                      static_cast<std::uint64_t>(*codec.info().kafka_attribute));
  Produced p{RandomRecords(rng, count, magic == 2, 1700000000000), {}};
  BatchOptions o;
  o.magic = static_cast<std::int8_t>(magic);
  o.codec = codec;
  BatchBuilder builder;
  EXPECT_TRUE(WriteBatch(builder, o, p.f.records, p.wire).ok());
  return p;
}

class Validate : public ::testing::TestWithParam<std::pair<int, CodecSpec>> {};

TEST_P(Validate, AssignsOffsetsAndKeepsRecords) {
  auto [magic, codec] = GetParam();
  for (TimestampType tt : {TimestampType::kCreateTime, TimestampType::kLogAppendTime}) {
    if (magic == 0 && tt == TimestampType::kLogAppendTime) continue;
    Produced p = Produce(magic, codec);
    const std::uint32_t crc_before = wire::Get32(p.wire.data() + kV2Crc);
    LogValidator validator;
    ValidationOptions vo;
    vo.base_offset = 5000;
    vo.partition_leader_epoch = 17;
    vo.timestamp_type = tt;
    vo.log_append_time = 1800000000000;
    ValidationResult res;
    // Twice: a validator reused on its own output must behave the same (benchmarks rely on it).
    for (int round = 0; round < 2; ++round) {
      Status s = validator.Validate(p.wire, vo, &res);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    const std::size_t n = p.f.records.size();
    EXPECT_EQ(res.records, n);
    EXPECT_EQ(res.last_offset, 5000 + static_cast<std::int64_t>(n) - 1);
    const bool log_append = tt == TimestampType::kLogAppendTime;
    EXPECT_EQ(res.recompressed, magic == 0 && !codec.is_none());
    if (magic == 2) {
      // baseOffset and partitionLeaderEpoch are outside the CRC: only LogAppendTime (or a
      // wrong maxTimestamp) changes it.
      EXPECT_EQ(res.crc_recomputed, log_append);
      if (!log_append) {
        EXPECT_EQ(wire::Get32(p.wire.data() + kV2Crc), crc_before);
      }
    }
    if (magic == 1 && !codec.is_none()) {
      EXPECT_EQ(res.crc_recomputed, log_append);
    }

    BatchReader reader;
    ReadResult got;
    Status s = reader.Read(p.wire.view(), got);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(got.records.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(got.records[i].offset, 5000 + static_cast<std::int64_t>(i));
      EXPECT_EQ(Own(got.records[i].value), Own(p.f.records[i].value));
      if (magic > 0) {
        EXPECT_EQ(got.records[i].timestamp,
                  log_append ? vo.log_append_time : p.f.records[i].timestamp);
      }
    }
    if (magic == 2) {
      EXPECT_EQ(got.batches[0].partition_leader_epoch, 17);
    }
    if (magic == 0 && !codec.is_none()) {
      EXPECT_EQ(got.records[0].stored_offset, 5000) << "v0 inner offsets are absolute";
    }
    if (magic == 1 && !codec.is_none()) {
      EXPECT_EQ(got.records[0].stored_offset, 0) << "v1 inner offsets stay relative";
      EXPECT_EQ(got.batches[0].base_offset, 5000);
    }
  }
}

std::vector<std::pair<int, CodecSpec>> Cases() {
  std::vector<std::pair<int, CodecSpec>> cases;
  for (int magic = 0; magic <= 2; ++magic) {
    for (const CodecSpec& c : CodecsFor(magic)) cases.emplace_back(magic, c);
  }
  return cases;
}
INSTANTIATE_TEST_SUITE_P(AllFormats, Validate, ::testing::ValuesIn(Cases()), [](const auto& p) {
  return testing::CaseName(p.param.first, p.param.second);
});

TEST(Validator, V1WrapperWithNonSequentialInnerOffsetsIsRebuilt) {
  // A v1 wrapper whose inner offsets start at 7 instead of 0: Kafka cannot assign in place.
  Produced p = Produce(1, CodecSpec{}, 4);
  BatchBuilder builder;
  ByteBuffer inner;
  BatchOptions o;
  o.magic = 1;
  o.base_offset = 7;
  ASSERT_TRUE(WriteBatch(builder, o, p.f.records, inner).ok());
  RecordCodecs codecs;
  CodecSpec gzip = ParseCodecSpec("gzip");
  ByteBuffer compressed;
  ASSERT_TRUE(codecs.Compress(1, gzip, inner.view(), compressed).ok());
  ByteBuffer wrapper;
  wrapper.ResizeUninitialized(kMessageV1Overhead);
  std::uint8_t* m = wrapper.data();
  wire::Put64(m, 10);
  wire::Put32(m + 8,
              static_cast<std::uint32_t>(kMessageV1Overhead - kLogOverhead + compressed.size()));
  m[16] = 1;
  m[17] = *gzip.info().kafka_attribute;
  wire::Put64(m + 18, 0);
  wire::Put32(m + 26, 0xffffffffu);
  wire::Put32(m + 30, static_cast<std::uint32_t>(compressed.size()));
  wrapper.Append(compressed.view());
  wire::Put32(wrapper.data() + 12, Crc32({wrapper.data() + 16, wrapper.size() - 16}));

  LogValidator validator;
  ValidationOptions vo;
  vo.base_offset = 100;
  ValidationResult res;
  Status s = validator.Validate(wrapper, vo, &res);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(res.recompressed);
  BatchReader reader;
  ReadResult got;
  ASSERT_TRUE(reader.Read(wrapper.view(), got).ok());
  for (std::size_t i = 0; i < got.records.size(); ++i) {
    EXPECT_EQ(got.records[i].stored_offset, static_cast<std::int64_t>(i));
    EXPECT_EQ(got.records[i].offset, 100 + static_cast<std::int64_t>(i));
  }
}

TEST(Validator, RejectsWhatKafkaRejects) {
  LogValidator validator;
  ValidationOptions vo;
  ValidationResult res;
  CodecSpec none;

  Produced p = Produce(2, none, 3);
  ByteBuffer bad = p.wire;
  wire::Put32(bad.data() + kV2LastOffsetDelta, 7);
  wire::Put32(bad.data() + kV2Crc,
              Crc32c({bad.data() + kV2Attributes, bad.size() - kV2Attributes}));
  EXPECT_NE(validator.Validate(bad, vo, &res).message().find("lastOffsetDelta 7"),
            std::string::npos);

  bad = p.wire;
  bad.Append(p.wire.view());  // two batches in one partition's data
  EXPECT_NE(validator.Validate(bad, vo, &res).message().find("2 entries"), std::string::npos);

  bad = p.wire;
  bad.data()[40] ^= 1;
  EXPECT_NE(validator.Validate(bad, vo, &res).message().find("CRC-32C mismatch"),
            std::string::npos);

  Produced v0 = Produce(0, none, 2);
  vo.timestamp_type = TimestampType::kLogAppendTime;
  EXPECT_FALSE(validator.Validate(v0.wire, vo, &res).ok());
}

// Kafka's validateRecord: CreateTime timestamps within [now - before, now + after], both
// ends included, not checked for records without a timestamp or on LogAppendTime topics;
// keys on compacted topics. For every magic that has the field, plain and compressed.
TEST(Validator, RecordTimestampLimitsAndCompactedKeys) {
  constexpr std::int64_t kNow = 1700000900000;
  for (int magic : {0, 1, 2}) {
    for (const char* codec_name : {"none", "gzip"}) {
      const CodecSpec codec = ParseCodecSpec(codec_name);
      const std::string where = "magic " + std::to_string(magic) + " " + codec_name;
      Record early, late, untimed, keyless;
      early.timestamp = kNow - 5000;
      late.timestamp = kNow + 1000;
      untimed.timestamp = kNoTimestamp;
      keyless.timestamp = kNow;
      early.key = late.key = untimed.key = std::string_view("k");
      early.value = late.value = untimed.value = keyless.value = std::string_view("value");
      std::vector<Record> records = {early, late, untimed};
      BatchOptions o;
      o.magic = static_cast<std::int8_t>(magic);
      o.codec = codec;
      BatchBuilder builder;
      ByteBuffer produced;
      ASSERT_TRUE(WriteBatch(builder, o, records, produced).ok()) << where;

      LogValidator validator;
      ValidationResult res;
      auto validate = [&](const ValidationOptions& vo) {
        ByteBuffer b = produced;
        return validator.Validate(b, vo, &res);
      };
      ValidationOptions vo;
      vo.log_append_time = kNow;
      vo.timestamp_before_max_ms = 5000;
      vo.timestamp_after_max_ms = 1000;
      EXPECT_TRUE(validate(vo).ok()) << where << ": " << validate(vo).message();
      vo.timestamp_before_max_ms = 4999;
      Status s = validate(vo);
      if (magic == 0) {
        EXPECT_TRUE(s.ok()) << where << ": v0 has no timestamps";
      } else {
        EXPECT_NE(s.message().find("record 0's timestamp"), std::string::npos) << where;
        EXPECT_NE(s.message().find("out of range"), std::string::npos) << where;
      }
      vo.timestamp_before_max_ms = 5000;
      vo.timestamp_after_max_ms = 999;
      s = validate(vo);
      if (magic == 0) {
        EXPECT_TRUE(s.ok()) << where;
      } else {
        EXPECT_NE(s.message().find("record 1's timestamp"), std::string::npos) << where;
      }
      vo.timestamp_after_max_ms = 0;
      vo.timestamp_before_max_ms = 0;
      if (magic > 0) {
        vo.timestamp_type = TimestampType::kLogAppendTime;
        EXPECT_TRUE(validate(vo).ok()) << where << ": LogAppendTime replaces the timestamps";
        vo.timestamp_type = TimestampType::kCreateTime;
      }

      vo = ValidationOptions{};
      vo.compacted_topic = true;
      EXPECT_TRUE(validate(vo).ok()) << where << ": every record has a key";
      records.push_back(keyless);
      ASSERT_TRUE(WriteBatch(builder, o, records, produced).ok()) << where;
      EXPECT_NE(validate(vo).message().find("record 3 has no key"), std::string::npos) << where;
      vo.compacted_topic = false;
      EXPECT_TRUE(validate(vo).ok()) << where;
    }
  }
}

// An idempotent producer's batch (producer id set) must carry a sequence.
TEST(Validator, ProducerIdNeedsASequence) {
  Record r;
  r.timestamp = 1700000000000;
  r.value = std::string_view("v");
  BatchOptions o;
  o.producer_id = 42;
  o.producer_epoch = 0;
  o.base_sequence = -1;
  BatchBuilder builder;
  ByteBuffer wire;
  ASSERT_TRUE(WriteBatch(builder, o, {&r, 1}, wire).ok());
  LogValidator validator;
  ValidationResult res;
  EXPECT_NE(
      validator.Validate(wire, {}, &res).message().find("producer id 42 with base sequence -1"),
      std::string::npos);
  o.base_sequence = 0;
  ASSERT_TRUE(WriteBatch(builder, o, {&r, 1}, wire).ok());
  EXPECT_TRUE(validator.Validate(wire, {}, &res).ok());
}

}  // namespace
}  // namespace kbench::record
