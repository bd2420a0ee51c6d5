// LatencyHistogram::Buckets(): what scripts/distributed sums across agents must give back
// exactly the percentiles that one histogram holding every sample gives.

#include "harness/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>

namespace kbench {
namespace {

// Percentile() recomputed from summed (upper bound, count) pairs, as
// scripts/kbench/distributed.py percentile() does.
std::uint64_t FromBuckets(const std::map<std::uint64_t, std::uint64_t>& buckets,
                          std::uint64_t count, std::uint64_t max, double q) {
  auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count)));
  rank = std::max<std::uint64_t>(rank, 1);
  std::uint64_t seen = 0;
  for (const auto& [bound, n] : buckets) {
    seen += n;
    if (seen >= rank) return std::min(bound, max);
  }
  return max;
}

TEST(LatencyHistogram, SummedBucketsGiveThePooledPercentiles) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> latency(7.0, 1.2);  // µs, a long tail
  LatencyHistogram agents[3], pooled;
  for (int a = 0; a < 3; ++a) {
    for (int i = 0; i < 5000 * (a + 1); ++i) {
      auto v = static_cast<std::uint64_t>(latency(rng)) + static_cast<std::uint64_t>(a) * 300;
      agents[a].Record(v);
      pooled.Record(v);
    }
  }
  std::map<std::uint64_t, std::uint64_t> summed;
  std::uint64_t count = 0, max = 0;
  for (const auto& h : agents) {
    for (const auto& [bound, n] : h.Buckets()) summed[bound] += n;
    count += h.count();
    max = std::max(max, h.max());
  }
  ASSERT_EQ(count, pooled.count());
  for (double q : {0.0, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0}) {
    EXPECT_EQ(FromBuckets(summed, count, max, q), pooled.Percentile(q)) << "q=" << q;
  }
}

TEST(LatencyHistogram, BucketsAreAscendingAndNonEmpty) {
  LatencyHistogram h;
  for (std::uint64_t v : {3u, 3u, 200u, 1000000u}) h.Record(v);
  auto b = h.Buckets();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].first, 3u);  // exact below 2^kSubBits
  EXPECT_EQ(b[0].second, 2u);
  EXPECT_LT(b[1].first, b[2].first);
  EXPECT_GE(b[2].first, 1000000u);  // an upper bound
}

}  // namespace
}  // namespace kbench
