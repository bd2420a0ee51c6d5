#pragma once

// The receiving end of an end-to-end measurement: a consumer on its own thread reads every
// partition of a fresh topic from offset 0 as records arrive, and records each record's
// latency from the send time the producer carried in it (ProducerOptions::stamp_send_time,
// steady-clock nanoseconds of this host) to the moment the application got it from
// rd_kafka_consumer_poll. Latencies are bucketed by intended send time into the intervals
// of a measured window, so the window's histogram holds exactly the records intended in it,
// however late they arrive. Verified while reading: each partition's offsets arrive once
// and in order from 0 (a duplicate or a gap fails the read), and every record carries the
// header; WaitFor checks that every delivered record has been received.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/admin.h"
#include "harness/histogram.h"
#include "harness/partition_check.h"
#include "harness/status.h"

namespace kbench {

class LatencyConsumer {
 public:
  // `settings` must include bootstrap.servers. Assigns every partition at offset 0 and
  // starts reading.
  static StatusOr<std::unique_ptr<LatencyConsumer>> Create(const ClientSettings& settings,
                                                           const std::string& topic,
                                                           int partitions);
  ~LatencyConsumer();
  LatencyConsumer(const LatencyConsumer&) = delete;
  LatencyConsumer& operator=(const LatencyConsumer&) = delete;

  // Starts a measured window at `origin` with intervals of `interval` (forgets the last).
  void OpenWindow(std::chrono::steady_clock::time_point origin, std::chrono::nanoseconds interval);
  // Waits until every partition p has returned want[p] records; fails on a read error, a
  // record out of sequence, more records than wanted, or after `timeout` (naming both
  // counts per partition).
  Status WaitFor(const PartitionCounts& want, std::chrono::milliseconds timeout);
  // After WaitFor: the latency (µs) of the records intended in [origin, end), and per
  // interval (for interval samples).
  LatencyHistogram WindowLatency(std::chrono::steady_clock::time_point end) const;
  std::vector<LatencyHistogram> IntervalLatency(std::chrono::steady_clock::time_point end) const;
  std::int64_t received() const;

 private:
  LatencyConsumer() = default;
  void Loop();
  void Fail(std::string message);

  RdKafkaPtr rk_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  PartitionCounts next_;  // per partition, the offset due next (= records received)
  std::string error_;
  std::uint64_t origin_ns_ = 0, interval_ns_ = 1;  // 0 origin: no window
  std::vector<LatencyHistogram> intervals_;
};

}  // namespace kbench
