#include "harness/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace kbench {
namespace {
constexpr std::uint64_t kLinearLimit = std::uint64_t{1} << LatencyHistogram::kSubBits;
constexpr std::size_t kBucketCount =
    kLinearLimit + (LatencyHistogram::kMaxExponent - LatencyHistogram::kSubBits) * kLinearLimit;
}  // namespace

LatencyHistogram::LatencyHistogram() : buckets_(kBucketCount, 0) {}

std::size_t LatencyHistogram::BucketOf(std::uint64_t v) {
  if (v < kLinearLimit) return static_cast<std::size_t>(v);
  int exponent = static_cast<int>(std::bit_width(v)) - 1;  // v in [2^exponent, 2^(exponent+1))
  if (exponent >= kMaxExponent) return kBucketCount - 1;
  int shift = exponent - kSubBits;
  std::uint64_t sub = (v >> shift) - kLinearLimit;  // 0 .. kLinearLimit-1
  return static_cast<std::size_t>(kLinearLimit + static_cast<std::uint64_t>(shift) * kLinearLimit +
                                  sub);
}

std::uint64_t LatencyHistogram::BucketUpperBound(std::size_t index) {
  if (index < kLinearLimit) return index;
  std::size_t rel = index - kLinearLimit;
  std::size_t shift = rel / kLinearLimit;
  std::uint64_t sub = rel % kLinearLimit;
  return ((kLinearLimit + sub + 1) << shift) - 1;
}

void LatencyHistogram::Record(std::uint64_t micros) {
  ++buckets_[BucketOf(micros)];
  ++count_;
  sum_ += micros;
  max_ = std::max(max_, micros);
  min_ = std::min(min_, micros);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (std::size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
  min_ = std::min(min_, other.min_);
}

void LatencyHistogram::Reset() {
  std::fill(buckets_.begin(), buckets_.end(), 0);
  count_ = sum_ = max_ = 0;
  min_ = ~std::uint64_t{0};
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> LatencyHistogram::Buckets() const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    if (buckets_[i] != 0) out.emplace_back(BucketUpperBound(i), buckets_[i]);
  }
  return out;
}

std::uint64_t LatencyHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::max<std::uint64_t>(rank, 1);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::min(BucketUpperBound(i), max_);
  }
  return max_;
}

}  // namespace kbench
