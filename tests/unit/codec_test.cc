#include "harness/codec.h"

#include <lz4frame.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "harness/payload.h"

namespace kbench {
namespace {

std::vector<CodecSpec> AllCodecLevels() {
  std::vector<CodecSpec> specs;
  for (auto name : KnownCodecNames()) {
    CodecSpec base = ParseCodecSpec(name);
    LevelRange range = base.info().levels;
    std::vector<int> levels = {0};
    if (range.min != range.max) {
      levels = {range.min, range.default_level, range.max};
      if (name == "lz4") levels.push_back(3);  // first HC level
    }
    for (int level : levels) {
      for (bool reuse : {true, false}) {
        CodecSpec s = base;
        s.level = level;
        s.reuse_context = reuse;
        specs.push_back(s);
      }
    }
  }
  return specs;
}

// Every row but none.
std::vector<std::string_view> CompressingCodecs() {
  std::vector<std::string_view> names;
  for (auto name : KnownCodecNames()) {
    if (name != "none") names.push_back(name);
  }
  return names;
}

std::string Describe(const CodecSpec& s) {
  return s.Name() + ":" + std::to_string(s.level) + (s.reuse_context ? "" : " (fresh)");
}

TEST(Codec, EveryCodecLevelAndPayloadRoundTrips) {
  const std::vector<std::string> payloads = {
      "zeros", "random", "az", "value_bound:500", "value_bound:50000", "repeated"};
  for (const auto& spec : AllCodecLevels()) {
    auto codec = MakeCodec(spec);
    for (const auto& payload : payloads) {
      for (std::size_t batch :
           {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{200000}}) {
        RecordSet records =
            PayloadGenerator(ParsePayloadSpec(payload), SizeSpec{100, 1000}, 7).GenerateUpTo(batch);
        ByteBuffer raw = batch == 0 ? ByteBuffer() : records.ConcatenatedValues();
        ByteBuffer compressed, restored;
        // Twice: a reused context must give the same result on its second use.
        for (int round = 0; round < 2; ++round) {
          ASSERT_TRUE(codec->Compress(raw.view(), compressed).ok()) << Describe(spec);
          Status s = codec->Decompress(compressed.view(), restored);
          ASSERT_TRUE(s.ok()) << Describe(spec) << " " << payload << ": " << s.message();
          ASSERT_EQ(restored.size(), raw.size()) << Describe(spec) << " " << payload;
          ASSERT_EQ(restored.str(), raw.str()) << Describe(spec) << " " << payload;
        }
      }
    }
  }
}

TEST(Codec, CompressibleDataShrinks) {
  RecordSet records =
      PayloadGenerator(ParsePayloadSpec("zeros"), SizeSpec{1000, 1000}, 1).Generate(64);
  ByteBuffer raw = records.ConcatenatedValues();
  for (auto name : CompressingCodecs()) {
    auto codec = MakeCodec(ParseCodecSpec(name));
    ByteBuffer out;
    ASSERT_TRUE(codec->Compress(raw.view(), out).ok());
    EXPECT_LT(out.size(), raw.size() / 10) << name;
  }
}

TEST(Codec, XerialFramingMatchesTheJavaClientLayout) {
  // 70000 bytes -> three 32 KiB blocks, as snappy-java's SnappyOutputStream writes them.
  RecordSet records =
      PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{1000, 1000}, 3).Generate(70);
  ByteBuffer raw = records.ConcatenatedValues();
  auto codec = MakeCodec(ParseCodecSpec("snappy_xerial"));
  ByteBuffer out;
  ASSERT_TRUE(codec->Compress(raw.view(), out).ok());
  const std::uint8_t header[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
  ASSERT_GE(out.size(), 16u);
  EXPECT_EQ(0, std::memcmp(out.data(), header, 16));
  std::size_t pos = 16, blocks = 0, total = 0;
  while (pos < out.size()) {
    ASSERT_LE(pos + 4, out.size());
    std::uint32_t len = (std::uint32_t{out.data()[pos]} << 24) |
                        (std::uint32_t{out.data()[pos + 1]} << 16) |
                        (std::uint32_t{out.data()[pos + 2]} << 8) | out.data()[pos + 3];
    pos += 4;
    ASSERT_LE(pos + len, out.size());
    // Each block is a complete raw snappy block of at most 32 KiB.
    ByteBuffer block;
    auto raw_codec = MakeCodec(ParseCodecSpec("snappy"));
    ASSERT_TRUE(raw_codec->Decompress(out.view().subspan(pos, len), block).ok());
    EXPECT_LE(block.size(), 32u * 1024);
    total += block.size();
    pos += len;
    ++blocks;
  }
  EXPECT_EQ(blocks, 3u);
  EXPECT_EQ(total, raw.size());
}

TEST(Codec, SnappyReaderAcceptsBothFramings) {
  RecordSet records = PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{500, 500}, 5).Generate(10);
  ByteBuffer raw = records.ConcatenatedValues();
  ByteBuffer xerial, plain, back;
  ASSERT_TRUE(MakeCodec(ParseCodecSpec("snappy_xerial"))->Compress(raw.view(), xerial).ok());
  ASSERT_TRUE(MakeCodec(ParseCodecSpec("snappy"))->Compress(raw.view(), plain).ok());
  auto reader = MakeCodec(ParseCodecSpec("snappy"));
  ASSERT_TRUE(reader->Decompress(xerial.view(), back).ok());
  EXPECT_EQ(back.str(), raw.str());
  ASSERT_TRUE(reader->Decompress(plain.view(), back).ok());
  EXPECT_EQ(back.str(), raw.str());
}

TEST(Codec, Lz4OutputIsAnLz4FrameThatLz4fDecodes) {
  RecordSet records =
      PayloadGenerator(ParsePayloadSpec("value_bound:500"), SizeSpec{1000, 1000}, 9).Generate(200);
  ByteBuffer raw = records.ConcatenatedValues();
  for (int level : {1, 9}) {
    CodecSpec spec = ParseCodecSpec("lz4");
    spec.level = level;
    ByteBuffer frame;
    ASSERT_TRUE(MakeCodec(spec)->Compress(raw.view(), frame).ok());
    ASSERT_GE(frame.size(), 7u);
    EXPECT_EQ(frame.data()[0], 0x04);  // LZ4 frame magic 0x184D2204, little endian
    EXPECT_EQ(frame.data()[3], 0x18);
    LZ4F_dctx* dctx = nullptr;
    ASSERT_FALSE(LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)));
    LZ4F_frameInfo_t info{};
    std::size_t consumed = frame.size();
    ASSERT_FALSE(LZ4F_isError(LZ4F_getFrameInfo(dctx, &info, frame.data(), &consumed)));
    EXPECT_EQ(info.blockSizeID, LZ4F_max64KB);
    EXPECT_EQ(info.blockMode, LZ4F_blockIndependent);
    std::vector<std::uint8_t> out(raw.size() + 1);
    std::size_t dst = out.size();
    std::size_t src = frame.size() - consumed;
    std::size_t hint =
        LZ4F_decompress(dctx, out.data(), &dst, frame.data() + consumed, &src, nullptr);
    LZ4F_freeDecompressionContext(dctx);
    ASSERT_FALSE(LZ4F_isError(hint));
    EXPECT_EQ(hint, 0u) << "frame not complete";
    ASSERT_EQ(dst, raw.size());
    EXPECT_EQ(0, std::memcmp(out.data(), raw.data(), raw.size()));
  }
}

TEST(Codec, TruncatedOrCorruptInputGivesAnErrorNeverACrash) {
  RecordSet records =
      PayloadGenerator(ParsePayloadSpec("value_bound:5000"), SizeSpec{300, 300}, 11).Generate(300);
  ByteBuffer raw = records.ConcatenatedValues();
  for (auto name : CompressingCodecs()) {
    auto codec = MakeCodec(ParseCodecSpec(name));
    ByteBuffer compressed, out;
    ASSERT_TRUE(codec->Compress(raw.view(), compressed).ok());
    // Every truncation must fail: a prefix of a valid stream is never a complete stream.
    for (std::size_t cut = 0; cut < compressed.size(); cut += 1 + compressed.size() / 97) {
      Status s = codec->Decompress(compressed.view().first(cut), out);
      EXPECT_FALSE(s.ok()) << name << " accepted a truncation at " << cut;
      EXPECT_FALSE(s.message().empty());
    }
    // Bit flips may occasionally still decode (no checksum in some framings), but must not
    // crash, hang or return more than the cap.
    for (std::size_t i = 0; i < compressed.size(); i += 1 + compressed.size() / 211) {
      ByteBuffer bad = compressed;
      bad.data()[i] ^= 0x5a;
      Status s = codec->Decompress(bad.view(), out, 1 << 20);
      if (s.ok()) {
        EXPECT_LE(out.size(), 1u << 20);
      }
    }
    // Garbage.
    std::string junk(1000, '\x7f');
    EXPECT_FALSE(codec->Decompress(AsBytes(junk), out).ok()) << name;
  }
}

TEST(Codec, DecompressionHonoursTheSizeCap) {
  RecordSet records =
      PayloadGenerator(ParsePayloadSpec("zeros"), SizeSpec{10000, 10000}, 1).Generate(100);
  ByteBuffer raw = records.ConcatenatedValues();
  for (auto name : KnownCodecNames()) {
    auto codec = MakeCodec(ParseCodecSpec(name));
    ByteBuffer compressed, out;
    ASSERT_TRUE(codec->Compress(raw.view(), compressed).ok());
    Status s = codec->Decompress(compressed.view(), out, 4096);
    EXPECT_FALSE(s.ok()) << name;
    EXPECT_NE(s.message().find("cap"), std::string::npos) << name << ": " << s.message();
  }
}

TEST(Codec, ParseRejectsUnknownCodecsAndBadLevelsWithTheValidValues) {
  try {
    ParseCodecSpec("notacodec");
    FAIL() << "accepted an unknown codec";
  } catch (const UsageError& e) {
    std::string msg = e.what();
    for (auto name : KnownCodecNames()) EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
  try {
    ParseCodecSpec("gzip:12");
    FAIL() << "accepted gzip level 12";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("1 to 9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ParseCodecSpec("zstd:abc"), UsageError);
  EXPECT_THROW(ParseCodecSpec("zstd:99"), UsageError);
  EXPECT_THROW(ParseCodecSpec("snappy:3"), UsageError);
  EXPECT_EQ(ParseCodecSpec("zstd:-5").level, -5);
  EXPECT_EQ(ParseCodecSpec("lz4:9").level, 9);
  EXPECT_EQ(ParseCodecSpec("snappy_xerial").Name(), "snappy_xerial");
  EXPECT_EQ(ParseCodecSpec("gzip:0").level, 0);  // 0: the library's default
}

TEST(Codec, KafkaCompressionCodesAreKafkas) {
  const std::vector<std::pair<std::string_view, int>> codes = {
      {"none", 0}, {"gzip", 1}, {"snappy", 2}, {"snappy_xerial", 2}, {"lz4", 3}, {"zstd", 4}};
  for (const auto& [name, code] : codes) {
    EXPECT_EQ(ParseCodecSpec(name).info().kafka_attribute, code) << name;
  }
  // A code reads with its first row (snappy reads both framings); unknown codes have none.
  EXPECT_EQ(CodecSpecForKafkaAttribute(2)->Name(), "snappy");
  EXPECT_FALSE(CodecSpecForKafkaAttribute(5));
  std::vector<std::string> kafka;
  for (const CodecSpec& c : KafkaCodecs()) kafka.push_back(c.Name());
  EXPECT_EQ(kafka, (std::vector<std::string>{"none", "gzip", "snappy", "lz4", "zstd"}));
  EXPECT_FALSE(KafkaCarries(ParseCodecSpec("zstd"), 1));
  EXPECT_TRUE(KafkaCarries(ParseCodecSpec("zstd"), 2));
}

// The table's own consistency: what families derive from a row must be usable.
TEST(Codec, EveryRowIsConsistent) {
  const auto table = CodecTable();
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(table[0].name, "none");  // CodecSpec{} is row 0
  for (const CodecInfo& c : table) {
    EXPECT_TRUE(c.make) << c.name;
    EXPECT_LE(c.levels.min, c.levels.max) << c.name;
    for (int level : c.bench_levels) {
      EXPECT_TRUE(level == 0 || (level >= c.levels.min && level <= c.levels.max)) << c.name;
    }
    EXPECT_EQ(c.version_key.empty(), c.version == nullptr) << c.name;
    EXPECT_TRUE(c.kafka_attribute || c.first_magic == 0) << c.name;
  }
}

TEST(Codec, DirectCallsRoundTripWithTheCodecsOwnFraming) {
  RecordSet records =
      PayloadGenerator(ParsePayloadSpec("value_bound:500"), SizeSpec{1000, 1000}, 4).Generate(64);
  ByteBuffer raw = records.ConcatenatedValues();
  int directs = 0;
  for (const CodecInfo& c : CodecTable()) {
    if (!c.make_direct) continue;
    ++directs;
    auto direct = c.make_direct(c.direct_level);
    std::vector<std::uint8_t> packed(direct->CompressBound(raw.size()));
    std::size_t n = direct->Compress(raw.view(), packed.data(), packed.size());
    ASSERT_GT(n, 0u) << c.name;
    // The Codec of the same row reads what the direct call wrote, and vice versa.
    CodecSpec spec = ParseCodecSpec(c.name);
    ByteBuffer back;
    ASSERT_TRUE(MakeCodec(spec)->Decompress(ByteView(packed.data(), n), back).ok()) << c.name;
    EXPECT_EQ(back.str(), raw.str()) << c.name;
    std::vector<std::uint8_t> out(raw.size() + 64);
    EXPECT_EQ(direct->Decompress(ByteView(packed.data(), n), out.data(), out.size()), raw.size())
        << c.name;
    EXPECT_EQ(0, std::memcmp(out.data(), raw.data(), raw.size())) << c.name;
  }
  // Not vacuous, whatever rows the table holds: a new codec adds no edit here.
  EXPECT_GT(directs, 0);
}

TEST(Codec, LibraryVersionsAreReadAtRunTime) {
  std::map<std::string, std::string> versions;
  for (const auto& [key, version] : CodecLibraryVersions()) {
    EXPECT_FALSE(version.empty()) << key;
    versions[key] = version;
  }
  // One per library: the rows that share one (snappy_xerial) leave the key empty.
  for (const CodecInfo& c : CodecTable()) {
    if (!c.version_key.empty()) {
      EXPECT_TRUE(versions.count(std::string(c.version_key))) << c.version_key;
    }
    if (!c.library.empty() && c.version_key.empty()) {
      EXPECT_TRUE(std::any_of(CodecTable().begin(), CodecTable().end(), [&](const CodecInfo& o) {
        return o.library == c.library && !o.version_key.empty();
      })) << c.name;
    }
  }
}

}  // namespace
}  // namespace kbench
