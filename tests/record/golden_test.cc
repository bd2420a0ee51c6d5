// Golden batches written by Apache Kafka's Java client (kafka-clients 3.9, see
// tests/golden/README.md): kbench's writers must produce byte-identical uncompressed
// batches from the same records and header fields, and kbench's readers must decode every
// golden batch, compressed ones included, to the records the manifest lists.

#include <gtest/gtest.h>

#include <deque>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "harness/record/reader.h"
#include "harness/record/record_codec.h"
#include "harness/record/writer.h"

namespace kbench::record {
namespace {

using nlohmann::json;

const std::string kDir = KBENCH_GOLDEN_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::optional<std::string> Hex(const json& j) {
  if (j.is_null()) return std::nullopt;
  std::string hex = j.get<std::string>(), out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::vector<json> GoldenFiles(bool uncompressed_only = false) {
  std::string text = ReadFile(kDir + "/manifest.json");
  if (text.empty()) return {};
  std::vector<json> files;
  const json manifest = json::parse(text);
  for (const json& f : manifest.at("files")) {
    if (!uncompressed_only || f.at("codec") == "none") files.push_back(f);
  }
  return files;
}

std::string NameOf(const ::testing::TestParamInfo<json>& p) {
  return p.param.at("name").get<std::string>();
}

class GoldenRead : public ::testing::TestWithParam<json> {};
// Compressed bytes depend on the codec library's version, so only uncompressed batches
// are compared byte for byte.
class GoldenWrite : public ::testing::TestWithParam<json> {};

TEST_P(GoldenRead, DecodesTheManifestRecords) {
  const json& f = GetParam();
  std::string bytes = ReadFile(kDir + "/" + f.at("file").get<std::string>());
  ASSERT_EQ(bytes.size(), f.at("size_bytes").get<std::size_t>());
  BatchReader reader;
  ReadResult got;
  Status s = reader.Read(AsBytes(bytes), got);
  ASSERT_TRUE(s.ok()) << s.message();

  const auto& batches = f.at("batches");
  ASSERT_EQ(got.batches.size(), batches.size());
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const json& want = batches[i];
    const BatchInfo& b = got.batches[i];
    EXPECT_EQ(b.wire_offset, want.at("position").get<std::size_t>());
    EXPECT_EQ(b.wire_bytes, want.at("size_bytes").get<std::size_t>());
    EXPECT_EQ(b.magic, want.at("magic").get<int>());
    EXPECT_EQ(b.codec.Name(), want.at("codec").get<std::string>());
    EXPECT_EQ(b.crc, want.at("crc").get<std::uint32_t>());
    EXPECT_EQ(b.attributes, want.at("attributes").get<int>());
    EXPECT_EQ(b.base_offset, want.at("base_offset").get<std::int64_t>());
    EXPECT_EQ(b.last_offset, want.at("last_offset").get<std::int64_t>());
    EXPECT_EQ(b.record_count, want.at("records_decoded").get<std::size_t>());
    EXPECT_EQ(b.timestamp_type == TimestampType::kLogAppendTime,
              want.at("timestamp_type") == "log_append");
    if (b.magic == 2) {
      EXPECT_EQ(b.partition_leader_epoch, want.at("partition_leader_epoch").get<int>());
      EXPECT_EQ(b.last_offset_delta, want.at("last_offset_delta").get<int>());
      EXPECT_EQ(b.base_timestamp, want.at("base_timestamp").get<std::int64_t>());
      EXPECT_EQ(b.max_timestamp, want.at("max_timestamp").get<std::int64_t>());
      EXPECT_EQ(b.producer_id, want.at("producer_id").get<std::int64_t>());
      EXPECT_EQ(b.producer_epoch, want.at("producer_epoch").get<int>());
      EXPECT_EQ(b.base_sequence, want.at("base_sequence").get<int>());
      EXPECT_EQ(b.transactional, want.at("is_transactional").get<bool>());
      EXPECT_EQ(b.control, want.at("is_control").get<bool>());
    } else if (!want.at("timestamp").is_null()) {
      EXPECT_EQ(b.max_timestamp, want.at("timestamp").get<std::int64_t>());
    }
  }

  const auto& records = f.at("records");
  ASSERT_EQ(got.records.size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const json& want = records[i];
    const DecodedRecord& r = got.records[i];
    SCOPED_TRACE("record " + std::to_string(i));
    EXPECT_EQ(r.offset, want.at("offset").get<std::int64_t>());
    EXPECT_EQ(r.timestamp, want.at("timestamp").get<std::int64_t>());
    EXPECT_EQ(r.key ? std::optional<std::string>(*r.key) : std::nullopt, Hex(want.at("key_hex")));
    EXPECT_EQ(r.value ? std::optional<std::string>(*r.value) : std::nullopt,
              Hex(want.at("value_hex")));
    auto hs = got.headers_of(r);
    ASSERT_EQ(hs.size(), want.at("headers").size());
    for (std::size_t h = 0; h < hs.size(); ++h) {
      EXPECT_EQ(hs[h].key, want.at("headers")[h].at("key").get<std::string>());
      EXPECT_EQ(hs[h].value ? std::optional<std::string>(*hs[h].value) : std::nullopt,
                Hex(want.at("headers")[h].at("value_hex")));
    }
  }

  if (f.at("magic") == 0 && f.at("codec") == "lz4") {
    // Kafka's magic 0 lz4 frame carries the KAFKA-3160 header checksum.
    std::size_t hc = 0;
    std::uint8_t correct = 0, broken = 0;
    ByteView frame = AsBytes(bytes).subspan(kMessageV0Overhead);
    ASSERT_TRUE(Lz4HeaderChecksums(frame, &hc, &correct, &broken));
    EXPECT_EQ(frame[hc], broken);
  }
}

TEST_P(GoldenWrite, IsByteIdentical) {
  const json& f = GetParam();
  std::string bytes = ReadFile(kDir + "/" + f.at("file").get<std::string>());

  BatchOptions o;
  o.magic = static_cast<std::int8_t>(f.at("magic").get<int>());
  o.base_offset = f.at("base_offset").get<std::int64_t>();
  if (f.at("timestamp_type") == "log_append") {
    o.timestamp_type = TimestampType::kLogAppendTime;
    o.log_append_time = f.at("log_append_time").get<std::int64_t>();
  }
  if (o.magic == 2) {
    const json& b = f.at("batches")[0];
    o.partition_leader_epoch = b.at("partition_leader_epoch").get<std::int32_t>();
    o.producer_id = b.at("producer_id").get<std::int64_t>();
    o.producer_epoch = b.at("producer_epoch").get<std::int16_t>();
    o.base_sequence = b.at("base_sequence").get<std::int32_t>();
    o.transactional = b.at("is_transactional").get<bool>();
  }
  std::deque<std::string> storage;
  std::deque<std::vector<Header>> headers;
  std::vector<Record> records;
  auto keep = [&](const std::optional<std::string>& s) -> std::optional<std::string_view> {
    if (!s) return std::nullopt;
    return storage.emplace_back(*s);
  };
  for (const json& want : f.at("records")) {
    Record r;
    r.timestamp = want.at("append_timestamp").get<std::int64_t>();
    r.key = keep(Hex(want.at("key_hex")));
    r.value = keep(Hex(want.at("value_hex")));
    auto& hs = headers.emplace_back();
    for (const json& h : want.at("headers")) {
      hs.push_back(Header{*keep(h.at("key").get<std::string>()), keep(Hex(h.at("value_hex")))});
    }
    r.headers = hs;
    records.push_back(r);
  }
  BatchBuilder builder;
  ByteBuffer out;
  Status s = WriteBatch(builder, o, records, out);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(out.size(), bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    ASSERT_EQ(out.data()[i], static_cast<std::uint8_t>(bytes[i]))
        << "first difference at byte " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Kafka39, GoldenRead, ::testing::ValuesIn(GoldenFiles()), NameOf);
INSTANTIATE_TEST_SUITE_P(Kafka39, GoldenWrite, ::testing::ValuesIn(GoldenFiles(true)), NameOf);

TEST(GoldenData, IsPresent) {
  // Without the data every parameterised test would silently vanish.
  EXPECT_GE(GoldenFiles().size(), 20u) << "missing " << kDir << "/manifest.json";
  // Uncompressed cases of every magic must be there for the byte-identity test to mean much.
  std::set<int> magics;
  for (const json& f : GoldenFiles(true)) magics.insert(f.at("magic").get<int>());
  EXPECT_EQ(magics, (std::set<int>{0, 1, 2}));
}

}  // namespace
}  // namespace kbench::record
