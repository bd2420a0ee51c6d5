#pragma once

// Reads a topic back from the beginning, as kafka-consumer-perf-test does, but with a
// manual assignment of every partition (no group rebalance to wait for, so its
// `rebalance.time.ms` is always 0 here). One consumer per driver; reused across reads so
// connection setup is paid once, outside the timed read.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "harness/admin.h"
#include "harness/status.h"

namespace kbench {

struct ConsumeResult {
  std::int64_t records = 0;
  std::int64_t value_bytes = 0;
  double seconds = 0;  // assignment to last record
};

class ConsumerDriver {
 public:
  // `settings` must include bootstrap.servers; group.id is set if absent (never committed).
  static std::unique_ptr<ConsumerDriver> Create(const ClientSettings& settings,
                                                const std::string& topic, int partitions,
                                                std::string* error);
  // Reads every partition from its beginning until `expected` records arrived; fails
  // when a partition reports an error or after `idle_timeout` without a record (naming
  // how many were read). Callers check the end offsets to rule out extra records.
  Status ReadAll(std::int64_t expected, std::chrono::milliseconds idle_timeout, ConsumeResult* out);

 private:
  ConsumerDriver() = default;
  RdKafkaPtr rk_;
  std::string topic_;
  int partitions_ = 0;
  bool assigned_ = false;
};

}  // namespace kbench
