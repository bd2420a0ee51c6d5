#pragma once

// Reads a topic back from the beginning, as kafka-consumer-perf-test does, but with a
// manual assignment of every partition (no group rebalance to wait for, so its
// `rebalance.time.ms` is always 0 here). One consumer per driver; reused across reads so
// connection setup is paid once, outside the timed read.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/admin.h"
#include "harness/partition_check.h"
#include "harness/rdkafka_stats.h"
#include "harness/status.h"

namespace kbench {

struct ConsumeResult {
  std::int64_t records = 0;
  std::int64_t value_bytes = 0;
  double seconds = 0;  // assignment to last record
  PartitionCounts records_per_partition;
};

// What a read of a fresh topic must return: each partition's records at offsets
// 0..counts[p]-1, each exactly once, in order (a per-partition sequence check: one compare
// per record, cheap enough for timed reads) and, when `digests` is given, records whose
// keys and values sum to those RecordDigests (hashes every value: for untimed reads).
struct ExpectedRecords {
  PartitionCounts counts;
  std::vector<std::uint64_t> digests;  // per partition; empty = no value check
};

// A librdkafka consumer handle from kbench's defaults followed by the user's settings (the
// user's win), with the main queue forwarded to the consumer queue. Shared by
// ConsumerDriver and LatencyConsumer. With `stats`, librdkafka's statistics (every 100 ms
// unless the settings say otherwise) are parsed into it; it must outlive the handle.
StatusOr<rd_kafka_t*> NewConsumerHandle(ClientSettings all, const ClientSettings& settings,
                                        StatsAccumulator* stats = nullptr);

class ConsumerDriver {
 public:
  // `settings` must include bootstrap.servers; group.id is set if absent (never committed).
  static StatusOr<std::unique_ptr<ConsumerDriver>> Create(const ClientSettings& settings,
                                                          const std::string& topic, int partitions);
  // Reads every partition from its beginning until each has returned its expected
  // records. Fails, naming the partition and offsets, when a record arrives out of
  // sequence (read twice, skipped) or beyond the expected count (extra records), when the
  // digests differ, when a partition reports an error, or after `idle_timeout` without a
  // record (naming expected and read counts per partition). Callers check the end offsets
  // to rule out extra records after the last one read.
  Status ReadAll(const ExpectedRecords& expected, std::chrono::milliseconds idle_timeout,
                 ConsumeResult* out);

  // Steady-state reading: passes over the topic from offset 0, each pass reading every
  // partition p's offsets 0..want[p]-1 once and in order (a record read twice, skipped or
  // beyond them fails, naming the partition and offsets), back to back (a complete pass
  // seeks every partition back to 0), until `deadline`. `cursor` carries the position
  // across calls, so several calls read without a pause; a default cursor starts a new
  // pass. With `window`, records are counted into its intervals by the time they were read
  // (the clock read every 64 records).
  struct Cursor {
    bool started = false;
    PartitionCounts next;        // per partition, the offset due next in this pass
    std::int64_t remaining = 0;  // records left in this pass
    std::int64_t passes = 0;     // completed passes
  };
  struct Window {
    std::chrono::steady_clock::time_point origin;
    std::chrono::steady_clock::duration interval{1};
    std::vector<std::int64_t> records, value_bytes;  // per interval
  };
  Status ReadUntil(const PartitionCounts& want, std::chrono::steady_clock::time_point deadline,
                   std::chrono::milliseconds idle_timeout, Cursor* cursor, Window* window);

  // librdkafka's statistics of this consumer: where a fetch waited (outbuf_latency: request
  // built to sent; rtt: the fetch's round trip; throttle), between two snapshots.
  StatsAccumulator::Snapshot StatsSnapshot() const { return stats_.Get(); }
  std::vector<StageWindow> StagesBetween(const StatsAccumulator::Snapshot& before,
                                         const StatsAccumulator::Snapshot& after) const {
    return stats_.StagesBetween(before, after);
  }

 private:
  ConsumerDriver() = default;
  Status StartPass();       // every partition from offset 0
  StatsAccumulator stats_;  // before rk_: the handle's callbacks write into it until it dies
  RdKafkaPtr rk_;
  std::string topic_;
  int partitions_ = 0;
  bool assigned_ = false;
};

}  // namespace kbench
