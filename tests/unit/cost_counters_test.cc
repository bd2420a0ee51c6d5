// The cost counters' own rules (fixtures/cost_counters.h), apart from what they measure.

#include "fixtures/cost_counters.h"

#include <gtest/gtest.h>

#include "fixtures/counters.h"

namespace kbench::bench {
namespace {

bool RefusedReset() { return false; }
bool AcceptedReset() { return true; }

benchmark::UserCounters Measure(bool (*reset_peak_rss)()) {
  CostMeter meter(nullptr, reset_peak_rss);
  meter.BeforeRun();
  meter.Begin();
  volatile double sink = 0;
  for (int i = 0; i < 200000; ++i) sink = sink + i;
  meter.End(-1);
  return meter.Counters(1000, 1e6);
}

// Without its reset the kernel's peak is the process's so far (set-up, earlier rows): it
// must not be reported as the row's, where compare would judge it.
TEST(CostMeter, PeakRssLeftOutWhenTheResetFails) {
  const benchmark::UserCounters refused = Measure(RefusedReset);
  EXPECT_EQ(refused.count(counters::kPeakRssMb), 0u);
  EXPECT_EQ(refused.count(counters::kCpuUsPerRecord), 1u);  // the rest is still reported
  const benchmark::UserCounters accepted = Measure(AcceptedReset);
  ASSERT_EQ(accepted.count(counters::kPeakRssMb), 1u);
  EXPECT_GT(accepted.at(counters::kPeakRssMb).value, 0);
}

}  // namespace
}  // namespace kbench::bench
