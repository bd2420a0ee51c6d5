#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace kbench {

// Latency histogram in microseconds with log-linear buckets: values below 2^kSubBits are
// exact, above that each power of two is split into 2^kSubBits linear buckets, giving a
// relative error below 1/2^kSubBits (0.8 % at 7 bits) up to about 2^40 µs. Mergeable by
// addition, so per-thread histograms combine without locks. Written by hand: Debian has
// no HdrHistogram_c.
class LatencyHistogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr int kMaxExponent = 40;

  LatencyHistogram();

  void Record(std::uint64_t micros);
  void Merge(const LatencyHistogram& other);
  void Reset();

  std::uint64_t count() const { return count_; }
  std::uint64_t sum() const { return sum_; }
  std::uint64_t max() const { return max_; }
  std::uint64_t min() const { return count_ ? min_ : 0; }
  double mean() const {
    return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0;
  }
  // q in [0, 1]; returns the upper bound of the bucket holding the q-quantile, clamped to
  // max(), so percentiles never exceed the observed maximum.
  std::uint64_t Percentile(double q) const;
  // The non-empty buckets as (upper bound, count), ascending: with count(), max() and q,
  // enough to recompute Percentile() exactly after summing the buckets of several
  // processes (scripts/distributed merges agents' histograms this way).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> Buckets() const;

 private:
  static std::size_t BucketOf(std::uint64_t v);
  static std::uint64_t BucketUpperBound(std::size_t index);

  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t max_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
};

}  // namespace kbench
