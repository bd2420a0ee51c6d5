#include "fixtures/counters.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace kbench::counters {
namespace {

TEST(MetricTable, NamesAreUniqueAndEachHasOneMergeRule) {
  std::set<std::string> names;
  for (const auto& m : MetricTable()) {
    EXPECT_TRUE(names.insert(std::string(m.name)).second) << m.name << " twice";
    const unsigned rules = m.flags & (kMergeSum | kMergeMax | kMergeHistogram);
    EXPECT_TRUE(rules == 0 || (rules & (rules - 1)) == 0) << m.name << ": two merge rules";
  }
}

TEST(MetricTable, MergeRulesAreNamedAsDescribed) {
  EXPECT_EQ(MergeRule(0), "mean");
  EXPECT_EQ(MergeRule(kMergeSum), "sum");
  EXPECT_EQ(MergeRule(kMergeMax | kOpenLoopLatency), "max");
  EXPECT_EQ(MergeRule(kMergeHistogram), "histogram");
}

TEST(MetricTable, EveryLatencyQuantileIsRecomputedFromTheHistogram) {
  for (const auto& q : LatencyQuantiles()) {
    for (auto name : {q.open_loop, q.queue}) {
      bool found = false;
      for (const auto& m : MetricTable()) {
        if (m.name == name) {
          found = true;
          EXPECT_EQ(MergeRule(m.flags), "histogram") << name;
        }
      }
      EXPECT_TRUE(found) << name << " is not in the metric table";
    }
  }
}

}  // namespace
}  // namespace kbench::counters
