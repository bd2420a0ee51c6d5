#pragma once

// Per-partition accounting of records: what a client knows it wrote (its delivery
// reports) against what the cluster holds (end offsets) or what a consumer read back.
// Always per partition: summed over partitions, a loss in one and a duplicate in another
// cancel out and the topic looks complete.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/status.h"

namespace kbench {

// Records per partition, indexed by partition id; a missing tail counts as 0.
using PartitionCounts = std::vector<std::int64_t>;

void AddCounts(PartitionCounts& into, const PartitionCounts& add);
std::int64_t TotalCount(const PartitionCounts& counts);

struct PartitionComparison {
  std::int64_t lost = 0;        // sum over partitions of got < expected
  std::int64_t duplicated = 0;  // sum over partitions of got > expected
  // The partitions that differ, e.g. "partition 1: delivered 5000, end offset 4990 (10
  // lost); partition 2: delivered 5000, end offset 5010 (10 extra)"; "" when all agree.
  std::string detail;
  bool equal() const { return lost == 0 && duplicated == 0; }
};

// `expected_label` and `got_label` name the two sides in `detail` ("delivered", "end offset").
PartitionComparison ComparePartitionCounts(const PartitionCounts& expected,
                                           const PartitionCounts& got,
                                           std::string_view expected_label,
                                           std::string_view got_label);

// The verdict on a topic's end offsets against the records delivered to it: ok when they
// agree, or when the only difference is a shortfall and `allow_loss` is set (acks=0 may
// lose records by design; the shortfall is then reported, not failed). Extra records
// (duplicates from retries, or someone else writing to the topic) always fail.
Status EndOffsetError(const PartitionComparison& c, bool allow_loss);

// One record's share of a partition's digest. A partition's digest is the sum (mod 2^64)
// over its records, so delivery reports and a consumer's reads agree, in whatever order
// they arrive, exactly when the same keys and values sit at the same offsets.
std::uint64_t RecordDigest(std::int64_t offset, std::string_view key, std::string_view value);

}  // namespace kbench
