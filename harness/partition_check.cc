#include "harness/partition_check.h"

#include <algorithm>

namespace kbench {

void AddCounts(PartitionCounts& into, const PartitionCounts& add) {
  if (into.size() < add.size()) into.resize(add.size(), 0);
  for (std::size_t p = 0; p < add.size(); ++p) into[p] += add[p];
}

std::int64_t TotalCount(const PartitionCounts& counts) {
  std::int64_t total = 0;
  for (std::int64_t n : counts) total += n;
  return total;
}

PartitionComparison ComparePartitionCounts(const PartitionCounts& expected,
                                           const PartitionCounts& got,
                                           std::string_view expected_label,
                                           std::string_view got_label) {
  // A topic with hundreds of partitions could make the message unreadable: name the first
  // few that differ, count the rest.
  constexpr int kNamed = 8;
  PartitionComparison c;
  int differing = 0;
  const std::size_t n = std::max(expected.size(), got.size());
  for (std::size_t p = 0; p < n; ++p) {
    const std::int64_t want = p < expected.size() ? expected[p] : 0;
    const std::int64_t have = p < got.size() ? got[p] : 0;
    if (want == have) continue;
    const std::int64_t diff = have < want ? want - have : have - want;
    (have < want ? c.lost : c.duplicated) += diff;
    if (++differing > kNamed) continue;
    if (!c.detail.empty()) c.detail += "; ";
    c.detail += "partition " + std::to_string(p) + ": " + std::string(expected_label) + " " +
                std::to_string(want) + ", " + std::string(got_label) + " " + std::to_string(have) +
                " (" + std::to_string(diff) + (have < want ? " lost)" : " extra)");
  }
  if (differing > kNamed) {
    c.detail += "; and " + std::to_string(differing - kNamed) + " more partitions";
  }
  return c;
}

Status EndOffsetError(const PartitionComparison& c, bool allow_loss) {
  if (c.equal() || (c.duplicated == 0 && allow_loss)) return Status::Ok();
  std::string msg =
      "topic end offsets differ from the records delivered, per partition: " + c.detail;
  if (c.lost > 0) {
    msg += "; " + std::to_string(c.lost) + " records lost";
    if (c.duplicated == 0) msg += " (--allow-loss reports a shortfall instead of failing)";
  }
  if (c.duplicated > 0) {
    msg += "; " + std::to_string(c.duplicated) +
           " records more than delivered (duplicates from retries, or another writer)";
  }
  return Status::Error(msg);
}

namespace {

// FNV-1a: not fast, but digests are computed only outside timed loops (the fill of a
// Consume topic and its untimed first read), and it needs nothing beyond the standard
// library.
std::uint64_t Fnv1a(std::string_view bytes, std::uint64_t h) {
  for (unsigned char b : bytes) {
    h ^= b;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// splitmix64's finalizer: spreads the offset over all 64 bits before it is combined.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t RecordDigest(std::int64_t offset, std::string_view key, std::string_view value) {
  // The key's length goes in first, so moving bytes between key and value changes the digest.
  std::uint64_t h = Fnv1a(key, 0xcbf29ce484222325ULL ^ Mix(key.size()));
  h = Fnv1a(value, h);
  return Mix(h ^ Mix(static_cast<std::uint64_t>(offset)));
}

}  // namespace kbench
