#pragma once

// Produce's reference row, Produce/bare_producev/...: what a user's own loop does, a plain
// rd_kafka_producev loop with the row's settings, warm-up and window and nothing of kbench's
// driver in it; Produce/send with the same parameters should reach at least 95 % of its
// records/s.
//
// Timed: in a window, the loop produces until the window's deadline (checking the clock
// every 64 records, when it polls) and counts the delivery reports served before it;
// with --records-per-iteration, N records and a flush per iteration.
// Not timed: cluster, topic, producer, records, the warm-up, the flush after a window.
// Verified: every record produced has a delivery report and none failed or was rejected,
// and each partition's end offset grew by exactly the records delivered to it
// (produce_setup.h), at the warm-up and after the run.

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "benchmarks/produce_params.h"
#include "benchmarks/produce_setup.h"
#include "fixtures/session.h"
#include "fixtures/window.h"
#include "harness/admin.h"
#include "harness/status.h"

namespace kbench::bench::produce {

class BareProducevWork {
 public:
  static StatusOr<std::unique_ptr<BareProducevWork>> Create(const ProduceParams& p);
  ~BareProducevWork();
  BareProducevWork(const BareProducevWork&) = delete;
  BareProducevWork& operator=(const BareProducevWork&) = delete;

  Status Verify();
  // Windowed: the same load as the window, for warmup_seconds, not measured and not flushed.
  Status BeginRun();
  void Iterate();
  std::int64_t items_per_iteration() const {
    return setup_.windowed() ? 0 : setup_.records_per_iteration();
  }
  std::int64_t bytes_per_iteration() const {
    return setup_.windowed() ? 0 : setup_.AverageValueBytes(setup_.records_per_iteration());
  }
  void Report(benchmark::State& state);
  const IntervalSeries& intervals() const { return intervals_; }

 private:
  using Clock = WindowSchedule::Clock;
  struct Count {
    std::int64_t records = 0, bytes = 0;
  };

  BareProducevWork(const ProduceParams& p, std::unique_ptr<BenchCluster> cluster);
  // The user's loop's producer, its delivery callback counting into this Work.
  Status CreateProducer();
  // The loop itself: producev, poll and retry on a full queue, poll now and then; with a
  // deadline, it also ends there and notes the delivered count at each interval boundary.
  void Loop(std::int64_t count, Clock::time_point deadline);
  void Flush();
  Status TakeError();

  ProduceSetup setup_;
  RdKafkaPtr rk_;
  rd_kafka_topic_t* rkt_ = nullptr;
  WindowSchedule window_;
  Clock::time_point next_boundary_;
  std::vector<Count> boundaries_;  // delivered counts at the window's interval boundaries
  IntervalSeries intervals_;
  std::uint64_t next_ = 0;
  std::int64_t produced_ = 0, delivered_ = 0, failed_ = 0, rejected_ = 0, delivered_bytes_ = 0;
  PartitionCounts delivered_per_partition_;  // over the benchmark's life
  bool flush_timed_out_ = false;
};

}  // namespace kbench::bench::produce
