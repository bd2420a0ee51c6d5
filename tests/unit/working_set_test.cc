#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "fixtures/batch_records.h"
#include "fixtures/options.h"
#include "harness/payload.h"

namespace kbench::bench {
namespace {

constexpr std::size_t kBatch = 64 * 1024;

std::string Batch(const WorkingSet& set, std::size_t b) {
  ByteBuffer values = set.ConcatenatedValues(b);
  return std::string(values.str());
}

// Every batch holds whole records within batch_bytes (a record larger than that alone), and
// no batch could have taken the next batch's first record.
void ExpectCutAsAProducerCuts(const WorkingSet& set, std::size_t batch_bytes) {
  std::size_t records = 0;
  for (std::size_t b = 0; b < set.batch_count(); ++b) {
    const auto batch = set.batch(b);
    ASSERT_FALSE(batch.empty()) << "batch " << b;
    records += batch.size();
    const std::size_t bytes = Batch(set, b).size();
    if (batch.size() > 1) {
      EXPECT_LE(bytes, batch_bytes) << "batch " << b;
    }
    if (b + 1 < set.batch_count()) {
      EXPECT_GT(bytes + set.batch(b + 1).front().value->size(), batch_bytes) << "batch " << b;
    }
  }
  EXPECT_EQ(records, set.record_count());
}

TEST(WorkingSet, DefaultIsManyDistinctBatchesLargerThanL2) {
  WorkingSet set(ParsePayloadSpec("az"), SizeSpec{1000, 1000}, kBatch, kDefaultPayloadSeed,
                 WorkingSetSpec{});
  EXPECT_GE(set.batch_count(), kWorkingSetMinBatches);
  EXPECT_GE(set.total_value_bytes(), kDefaultWorkingSetBytes);
  EXPECT_GE(set.batch_count(), kDefaultWorkingSetBytes / kBatch);
  std::set<std::string> distinct;
  for (std::size_t b = 0; b < set.batch_count(); ++b) distinct.insert(Batch(set, b));
  EXPECT_EQ(distinct.size(), set.batch_count()) << "batches repeat";
  ExpectCutAsAProducerCuts(set, kBatch);
}

TEST(WorkingSet, AtLeastMinBatchesWhateverTheBytes) {
  // Large batches, records larger than a batch, and ranges of sizes: still min_batches.
  struct Case {
    SizeSpec sizes;
    std::size_t batch_bytes;
  };
  for (const Case& c : {Case{{1000, 1000}, 1 << 20}, Case{{40000, 40000}, 16 * 1024},
                        Case{{250, 750}, 16 * 1024}, Case{{10000, 10000}, 16 * 1024}}) {
    WorkingSet set(ParsePayloadSpec("value_bound:500"), c.sizes, c.batch_bytes, 7,
                   WorkingSetSpec{kWorkingSetMinBatches, 1});
    EXPECT_GE(set.batch_count(), kWorkingSetMinBatches) << c.sizes.Name() << " " << c.batch_bytes;
    ExpectCutAsAProducerCuts(set, c.batch_bytes);
  }
}

TEST(WorkingSet, MinBytesIsHonoured) {
  const std::size_t bytes = 3 * kDefaultWorkingSetBytes / 2;
  WorkingSet set(ParsePayloadSpec("random"), SizeSpec{100, 100}, 16 * 1024, 1,
                 WorkingSetSpec{kWorkingSetMinBatches, bytes});
  EXPECT_GE(set.total_value_bytes(), bytes);
  EXPECT_LT(set.total_value_bytes(), bytes + 16 * 1024);  // not far beyond it either
}

TEST(WorkingSet, HotIsTheOneBatchOfTheOldRows) {
  const PayloadSpec az = ParsePayloadSpec("az");
  WorkingSet set(az, SizeSpec{1000, 1000}, kBatch, kDefaultPayloadSeed, kHotBatch);
  ASSERT_EQ(set.batch_count(), 1u);
  RecordSet one =
      PayloadGenerator(az, SizeSpec{1000, 1000}, kDefaultPayloadSeed).GenerateUpTo(kBatch);
  EXPECT_EQ(Batch(set, 0), std::string(one.ConcatenatedValues().str()));
}

TEST(WorkingSet, FilePayloadIsTheWholeFileInBatchSlices) {
  const std::string path = ::testing::TempDir() + "working_set_records.txt";
  std::string content;
  for (int i = 0; i < 5000; ++i) {
    content += "{\"id\":" + std::to_string(i) + ",\"name\":\"user" + std::to_string(i * 7919) +
               "\",\"tags\":[" + std::string(static_cast<std::size_t>(i % 13), 'x') + "]}\n";
  }
  std::ofstream(path, std::ios::binary) << content;
  // The file is far smaller than the default working set: it is still walked once, whole.
  WorkingSet set(ParsePayloadSpec("file:" + path), SizeSpec{}, 4096, 1, WorkingSetSpec{});
  std::remove(path.c_str());
  std::string joined;
  for (std::size_t b = 0; b < set.batch_count(); ++b) {
    for (const auto& r : set.batch(b)) joined += std::string(*r.value) + "\n";
  }
  EXPECT_EQ(joined, content) << "the batches are not the file, once, in order";
  EXPECT_EQ(set.record_count(), 5000u);
  EXPECT_GE(set.batch_count(), content.size() / 4096);
  ExpectCutAsAProducerCuts(set, 4096);
}

TEST(WorkingSet, TimestampsCountWithinEachBatch) {
  WorkingSet set(ParsePayloadSpec("az"), SizeSpec{1000, 1000}, 16 * 1024, 1,
                 WorkingSetSpec{kWorkingSetMinBatches, 1});
  for (std::size_t b = 0; b < set.batch_count(); ++b) {
    const auto batch = set.batch(b);
    for (std::size_t i = 0; i < batch.size(); ++i)
      ASSERT_EQ(batch[i].timestamp, kBatchBaseTimestamp + static_cast<std::int64_t>(i));
  }
}

}  // namespace
}  // namespace kbench::bench
