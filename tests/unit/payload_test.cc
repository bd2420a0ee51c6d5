#include "harness/payload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "harness/codec.h"
#include "harness/status.h"

namespace kbench {
namespace {

const char* kKinds[] = {"zeros",   "random", "az", "value_bound:500", "value_bound:50000",
                        "repeated"};

TEST(Payload, SameSeedSameBytesDifferentSeedDifferentBytes) {
  for (const char* kind : kKinds) {
    PayloadGenerator a(ParsePayloadSpec(kind), SizeSpec{250, 750}, 42);
    PayloadGenerator b(ParsePayloadSpec(kind), SizeSpec{250, 750}, 42);
    PayloadGenerator c(ParsePayloadSpec(kind), SizeSpec{250, 750}, 43);
    RecordSet ra = a.Generate(50), rb = b.Generate(50), rc = c.Generate(50);
    ASSERT_EQ(ra.size(), 50u);
    for (std::size_t i = 0; i < ra.size(); ++i) {
      ASSERT_EQ(ra.value(i), rb.value(i)) << kind;
      ASSERT_EQ(ra.key(i), rb.key(i)) << kind;
    }
    if (std::string(kind) != "zeros") {
      bool differs = false;
      for (std::size_t i = 0; i < ra.size(); ++i) differs |= ra.value(i) != rc.value(i);
      EXPECT_TRUE(differs) << kind;
    }
  }
}

TEST(Payload, KnownBytesForAFixedSeed) {
  // Pins the generator (SplitMix64 and its mapping): a change here silently changes every
  // compression ratio in the results history, so it must be a deliberate one.
  RecordSet az =
      PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{16, 16}, kDefaultPayloadSeed).Generate(2);
  EXPECT_EQ(az.value(0), "NCTCJYNEKUFYOZPR");
  EXPECT_EQ(az.value(1), "VJWNRHJAEYTLEHJZ");
  RecordSet vb =
      PayloadGenerator(ParsePayloadSpec("value_bound:500"), SizeSpec{24, 24}, 1).Generate(1);
  EXPECT_EQ(vb.value(0), "19 90 235 261 48 45 33 2");
}

TEST(Payload, SizesAreHonoured) {
  for (const char* kind : kKinds) {
    RecordSet fixed = PayloadGenerator(ParsePayloadSpec(kind), SizeSpec{100, 100}, 1).Generate(100);
    for (std::size_t i = 0; i < fixed.size(); ++i) ASSERT_EQ(fixed.value(i).size(), 100u) << kind;
    EXPECT_EQ(fixed.total_value_bytes(), 10000u);
    RecordSet range =
        PayloadGenerator(ParsePayloadSpec(kind), SizeSpec{250, 750}, 1).Generate(2000);
    std::size_t lo = 10000, hi = 0;
    for (std::size_t i = 0; i < range.size(); ++i) {
      lo = std::min(lo, range.value(i).size());
      hi = std::max(hi, range.value(i).size());
    }
    EXPECT_GE(lo, 250u) << kind;
    EXPECT_LE(hi, 750u) << kind;
    EXPECT_LT(lo, 300u) << kind;  // the range is actually used
    EXPECT_GT(hi, 700u) << kind;
  }
}

TEST(Payload, GenerateUpToStopsAtWholeRecords) {
  RecordSet r =
      PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{1000, 1000}, 1).GenerateUpTo(65536);
  EXPECT_EQ(r.size(), 65u);
  EXPECT_EQ(r.total_value_bytes(), 65000u);
  RecordSet big =
      PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{10000, 10000}, 1).GenerateUpTo(1000);
  EXPECT_EQ(big.size(), 1u) << "at least one record";
  RecordSet empty = PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{0, 0}, 1).GenerateUpTo(10);
  EXPECT_LE(empty.size(), 11u) << "empty records must not loop forever";
}

TEST(Payload, KindsHaveTheirCharacter) {
  RecordSet az = PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{1000, 1000}, 1).Generate(10);
  for (char ch : az.value(0)) ASSERT_TRUE(ch >= 'A' && ch <= 'Z');
  RecordSet zeros = PayloadGenerator(ParsePayloadSpec("zeros"), SizeSpec{100, 100}, 1).Generate(1);
  EXPECT_EQ(zeros.value(0), std::string(100, '\0'));
  RecordSet vb =
      PayloadGenerator(ParsePayloadSpec("value_bound:500"), SizeSpec{1000, 1000}, 1).Generate(5);
  for (char ch : vb.value(0)) ASSERT_TRUE((ch >= '0' && ch <= '9') || ch == ' ');
  RecordSet rep =
      PayloadGenerator(ParsePayloadSpec("repeated"), SizeSpec{500, 500}, 1).Generate(100);
  ASSERT_TRUE(rep.has_keys());
  std::set<std::string_view> bodies, keys;
  for (std::size_t i = 0; i < rep.size(); ++i) {
    bodies.insert(rep.value(i));
    keys.insert(rep.key(i));
  }
  EXPECT_LE(bodies.size(), 8u);
  EXPECT_GT(keys.size(), 90u);
}

TEST(Payload, CompressibilityFollowsTheKnob) {
  auto ratio = [](const char* kind) {
    RecordSet r = PayloadGenerator(ParsePayloadSpec(kind), SizeSpec{1000, 1000}, 1).Generate(64);
    ByteBuffer raw = r.ConcatenatedValues(), out;
    EXPECT_TRUE(MakeCodec(ParseCodecSpec("zstd:3"))->Compress(raw.view(), out).ok());
    return static_cast<double>(out.size()) / static_cast<double>(raw.size());
  };
  EXPECT_GT(ratio("random"), 0.99);
  EXPECT_NEAR(ratio("az"), 0.6, 0.05);  // A-Z text, as perf-test sends (README, --payload)
  EXPECT_LT(ratio("value_bound:500"), ratio("value_bound:50000"));
  EXPECT_LT(ratio("zeros"), 0.01);
}

TEST(Payload, FileRecordsAreSplitOnTheDelimiter) {
  std::string path = ::testing::TempDir() + "kbench_payload_test.txt";
  {
    std::ofstream out(path);
    out << "first\nsecond record\n\nthird\n";
  }
  RecordSet r = PayloadGenerator(ParsePayloadSpec("file:" + path), SizeSpec{}, 1).Generate(5);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r.value(0), "first");
  EXPECT_EQ(r.value(1), "second record");
  EXPECT_EQ(r.value(2), "third");
  EXPECT_EQ(r.value(3), "first");
  std::remove(path.c_str());
  EXPECT_THROW(PayloadGenerator(ParsePayloadSpec("file:/nonexistent/x"), SizeSpec{}, 1).Generate(1),
               UsageError);
}

// The send path's records (Produce, EndToEnd): distinct over more than a row's batches hold.
TEST(SendRecords, DistinctBytesAreTheLargerOfEveryProducersBatchesAndTheFloor) {
  EXPECT_EQ(SendPathDistinctBytes(SendShape{1000000, 2, 1}), kMinDistinctSendBytes);
  EXPECT_EQ(SendPathDistinctBytes(SendShape{1000000, 100, 1}), 100000000u);
  EXPECT_EQ(SendPathDistinctBytes(SendShape{65536, 2, 8}), kMinDistinctSendBytes);
  EXPECT_EQ(SendPathDistinctBytes(SendShape{1000000, 4, 8}), 32000000u);
  constexpr std::size_t kMax = static_cast<std::size_t>(-1);
  EXPECT_EQ(SendPathDistinctBytes(SendShape{kMax / 2, 3, 1}), kMax);  // saturates
  EXPECT_EQ(SendPathDistinctBytes(SendShape{kMax / 2, 1, 3}), kMax);
}

TEST(SendRecords, GeneratedSetsHoldAtLeastWhatTheRowNeedsAndNeverRepeat) {
  FileValueBytesCache files;
  for (const char* kind : {"az", "random", "value_bound:500"}) {
    const PayloadSpec spec = ParsePayloadSpec(kind);
    const SendRecordsPlan plan = PlanSendRecords(spec, SendShape{1000000, 2, 1}, false, files);
    EXPECT_FALSE(plan.repeats) << kind;
    EXPECT_TRUE(plan.refusal.empty()) << kind;
    EXPECT_EQ(plan.generate, kMinDistinctSendBytes) << kind;
    const RecordSet set =
        PayloadGenerator(spec, SizeSpec{100, 100}, kDefaultPayloadSeed).GenerateSendRecords(plan);
    EXPECT_GE(set.total_value_bytes(), plan.needed) << kind;
    EXPECT_LT(set.total_value_bytes(), plan.needed + 100) << kind;
    // No value twice: the cycle is the whole set.
    std::set<std::string_view> distinct;
    for (std::size_t i = 0; i < set.size(); ++i) distinct.insert(set.value(i));
    EXPECT_EQ(distinct.size(), set.size()) << kind;
  }
}

TEST(SendRecords, MoreThanKbenchGeneratesIsRefusedUnlessRepeatsAreAllowed) {
  FileValueBytesCache files;
  const PayloadSpec az = ParsePayloadSpec("az");
  const SendShape huge{2000000000, 10000, 1};
  const SendRecordsPlan refused = PlanSendRecords(az, huge, false, files);
  EXPECT_TRUE(refused.repeats);
  EXPECT_NE(refused.refusal.find("more than the 4294967296 kbench generates"), std::string::npos)
      << refused.refusal;
  const SendRecordsPlan allowed = PlanSendRecords(az, huge, true, files);
  EXPECT_TRUE(allowed.repeats);
  EXPECT_TRUE(allowed.refusal.empty());
  EXPECT_EQ(allowed.generate, kMaxDistinctSendBytes);
}

TEST(SendRecords, AFileSmallerThanNeededIsRefusedNamingBothSizes) {
  FileValueBytesCache files;
  const std::string small = ::testing::TempDir() + "kbench_send_small.txt";
  {
    std::ofstream out(small, std::ios::binary);
    out << "first record\nsecond\n\nthird";  // 23 value bytes, an empty record
  }
  PayloadSpec spec = ParsePayloadSpec("file:" + small);
  EXPECT_EQ(FileValueBytes(spec), 23u);
  EXPECT_EQ(files.Get(spec), 23u);
  const SendRecordsPlan refused = PlanSendRecords(spec, SendShape{1000000, 2, 1}, false, files);
  EXPECT_TRUE(refused.repeats);
  EXPECT_EQ(refused.file_bytes, 23u);
  EXPECT_NE(refused.refusal.find("holds 23 bytes of values"), std::string::npos) << refused.refusal;
  EXPECT_NE(refused.refusal.find("needs 16777216 bytes of distinct values"), std::string::npos)
      << refused.refusal;
  EXPECT_NE(refused.refusal.find("--allow-repeats"), std::string::npos) << refused.refusal;
  EXPECT_FALSE(refused.cycles());  // refused rows do not run: their names stay plain
  const SendRecordsPlan allowed = PlanSendRecords(spec, SendShape{1000000, 2, 1}, true, files);
  EXPECT_TRUE(allowed.repeats);
  EXPECT_TRUE(allowed.refusal.empty());
  EXPECT_TRUE(allowed.cycles());
  // Cycled as it is: each record once, in file order.
  RecordSet set = PayloadGenerator(spec, SizeSpec{}, 1).GenerateSendRecords(allowed);
  ASSERT_EQ(set.size(), 3u);
  EXPECT_EQ(set.value(2), "third");
  // The cache reads a file once: what it said before the file grew, it says after.
  { std::ofstream(small, std::ios::app) << "\nfourth"; }
  EXPECT_EQ(files.Get(spec), 23u);
  EXPECT_EQ(FileValueBytes(spec), 29u);
  std::remove(small.c_str());
}

TEST(SendRecords, AFileLargeEnoughIsSentWholeAndOnce) {
  FileValueBytesCache files;
  const std::string big = ::testing::TempDir() + "kbench_send_big.txt";
  {
    std::ofstream out(big, std::ios::binary);
    const std::string line(1023, 'x');
    for (std::size_t i = 0; i < kMinDistinctSendBytes / 1023 + 1; ++i) out << line << '\n';
  }
  PayloadSpec spec = ParsePayloadSpec("file:" + big);
  const SendRecordsPlan plan = PlanSendRecords(spec, SendShape{1000000, 2, 1}, false, files);
  EXPECT_FALSE(plan.repeats);
  EXPECT_TRUE(plan.refusal.empty());
  RecordSet set = PayloadGenerator(spec, SizeSpec{}, 1).GenerateSendRecords(plan);
  EXPECT_EQ(set.size(), kMinDistinctSendBytes / 1023 + 1);
  EXPECT_EQ(set.total_value_bytes(), plan.file_bytes);
  std::remove(big.c_str());
}

TEST(Payload, BadSpecsAreRejectedWithTheValidValues) {
  try {
    ParsePayloadSpec("lorem");
    FAIL();
  } catch (const UsageError& e) {
    std::string msg = e.what();
    for (auto kind : KnownPayloadKinds()) EXPECT_NE(msg.find(kind), std::string::npos) << msg;
  }
  EXPECT_THROW(ParsePayloadSpec("value_bound:"), UsageError);
  EXPECT_THROW(ParsePayloadSpec("value_bound:0"), UsageError);
  EXPECT_THROW(ParsePayloadSpec("value_bound:-3"), UsageError);
  EXPECT_THROW(ParsePayloadSpec("file:"), UsageError);
  EXPECT_THROW(ParseSizeSpec("750-250"), UsageError);
  EXPECT_THROW(ParseSizeSpec("abc"), UsageError);
  EXPECT_THROW(ParseSizeSpec("99999999999"), UsageError);
  EXPECT_EQ(ParseSizeSpec("250-750").Name(), "250-750");
  EXPECT_EQ(ParsePayloadSpec("value_bound:500").Name(), "value_bound:500");
}

// Counts of each key over one period of the drawn sequence.
std::map<std::string, std::size_t> KeyCounts(const RecordSet& set, std::size_t period) {
  std::map<std::string, std::size_t> counts;
  for (std::size_t n = 0; n < period; ++n) ++counts[std::string(set.key_at(n))];
  return counts;
}

TEST(Keys, UniformDrawsEveryKeyAboutEquallyAndIsDeterministic) {
  RecordSet a = PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{100, 100}, 7).Generate(100);
  RecordSet b = PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{100, 100}, 7).Generate(100);
  EXPECT_FALSE(a.has_keys());
  KeySpec spec{KeyDistribution::kUniform, 100};
  a.DrawKeys(spec, 7);
  b.DrawKeys(spec, 7);
  ASSERT_TRUE(a.has_keys());
  const std::size_t period = RecordSet::kMinKeySequence;
  for (std::size_t n = 0; n < 1000; ++n) ASSERT_EQ(a.key_at(n), b.key_at(n));
  // The sequence is longer than the set and cycles with its own period.
  EXPECT_EQ(a.key_at(period + 5), a.key_at(5));
  const auto counts = KeyCounts(a, period);
  ASSERT_EQ(counts.size(), 100u);  // 655 expected per key: every key drawn
  for (const auto& [key, n] : counts) {
    EXPECT_EQ(key.size(), 3u) << key;  // "k" + two digits: one width
    EXPECT_GT(n, 655 * 0.8) << key;
    EXPECT_LT(n, 655 * 1.2) << key;
  }
}

TEST(Keys, ZipfFavoursTheFirstRanksAsItsWeightsSay) {
  RecordSet set = PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{100, 100}, 1).Generate(10);
  KeySpec spec{KeyDistribution::kZipf, 1000, 0.99};
  set.DrawKeys(spec, 1);
  const auto counts = KeyCounts(set, RecordSet::kMinKeySequence);
  double total_weight = 0;
  for (int k = 1; k <= 1000; ++k) total_weight += 1.0 / std::pow(k, 0.99);
  const double expected_first = RecordSet::kMinKeySequence / total_weight;  // about 8700
  EXPECT_NEAR(static_cast<double>(counts.at("k000")), expected_first, expected_first * 0.05);
  EXPECT_GT(counts.at("k000"), 1.8 * static_cast<double>(counts.at("k001")));
  EXPECT_GT(counts.size(), 500u);  // a long tail, not a handful of keys
}

TEST(Keys, NoneKeepsThePayloadsKeysAndBadCountsAreUsageErrors) {
  RecordSet rep =
      PayloadGenerator(ParsePayloadSpec("repeated"), SizeSpec{100, 100}, 3).Generate(20);
  const std::string first(rep.key_at(0));
  rep.DrawKeys(KeySpec{}, 3);
  EXPECT_EQ(rep.key_at(0), first);
  EXPECT_EQ(rep.key_at(20), rep.key(0));  // the payload's keys: one per record
  EXPECT_THROW(rep.DrawKeys(KeySpec{KeyDistribution::kUniform, 0}, 3), UsageError);
  EXPECT_THROW(rep.DrawKeys(KeySpec{KeyDistribution::kZipf, kMaxDistinctKeys + 1}, 3), UsageError);
  EXPECT_THROW(ParseKeyDistribution("hot"), UsageError);
  EXPECT_EQ(KeySpec{KeyDistribution::kZipf}.Name(), "zipf");
}

TEST(Keys, ViewsSurviveAMoveOfTheSet) {
  RecordSet set = PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{100, 100}, 5).Generate(4);
  set.DrawKeys(KeySpec{KeyDistribution::kUniform, 3}, 5);  // 3 keys of 2 bytes: tiny storage
  const std::string before(set.key_at(1));
  RecordSet moved = std::move(set);
  EXPECT_EQ(moved.key_at(1), before);
}

}  // namespace
}  // namespace kbench
