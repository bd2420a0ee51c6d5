#pragma once

// What every Produce row sets up before it is timed, shared by the driver's rows
// (produce_bench.cc) and the reference loop (produce_reference.h): the cluster and topic,
// the records cycled through, the client settings, and the end-offset check that verifies
// each partition got exactly the records delivered to it. Nothing here is timed.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>

#include <benchmark/benchmark.h>

#include "benchmarks/produce_params.h"
#include "fixtures/cluster.h"
#include "harness/partition_check.h"
#include "harness/payload.h"
#include "harness/status.h"

namespace kbench::bench::produce {

// Records per iteration of fixed-count bursts (--records-per-iteration; windows otherwise),
// and per warm-up when the row sets none.
std::int64_t RecordsPerIteration(const ClusterRun& run);

class ProduceSetup {
 public:
  // The row's cluster and topic, which a Work's factory creates first.
  static StatusOr<std::unique_ptr<BenchCluster>> CreateCluster(const ProduceParams& p);
  ProduceSetup(const ProduceParams& p, std::unique_ptr<BenchCluster> cluster);

  // Per partition, the end offsets against the records delivered to it: with every acks,
  // since acks=0 loses records silently (its delivery reports only say "sent").
  // With transactions, each partition of a broker's log also holds the markers its
  // transactions wrote. librdkafka's mock cluster answers EndTxn without writing any
  // (its end offsets equal the delivered records), so there they are not expected.
  Status CheckEndOffsets(const PartitionCounts& delivered, const PartitionCounts& markers = {});
  // Counters of the last check, in every row's JSON (0 when nothing is missing).
  void ReportEndOffsets(benchmark::State& state, std::int64_t delivered_total) const;

  const ProduceParams& params() const { return params_; }
  const ClusterRun& run() const { return params_.run; }
  bool windowed() const { return params_.run.windowed(); }
  std::int64_t records_per_iteration() const { return RecordsPerIteration(params_.run); }
  std::chrono::duration<double> warmup_seconds() const {
    return std::chrono::duration<double>(params_.run.warmup_seconds);
  }
  const BenchCluster& cluster() const { return *cluster_; }
  const RecordSet& records() const { return records_; }
  const ClientSettings& settings() const { return settings_; }
  // The records of the check round that precedes a row. A paced windowed row warms up for
  // warmup_seconds anyway, so its check is kept short: 2,000 records at 1,000 records/s
  // would add two seconds to every such row.
  std::int64_t warmup() const {
    if (params_.warmup >= 0) return params_.warmup;
    const std::int64_t tenth = RecordsPerIteration(params_.run) / 10;
    if (!windowed() || params_.rate <= 0) return tenth;
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(params_.rate) / 4, 1, tenth);
  }
  std::int64_t AverageValueBytes(std::int64_t count) const {
    return static_cast<std::int64_t>(static_cast<double>(records_.total_value_bytes()) /
                                     static_cast<double>(records_.size()) *
                                     static_cast<double>(count));
  }

 private:
  Status CheckExpectedEndOffsets(const PartitionCounts& delivered, const char* what);

  ProduceParams params_;
  std::unique_ptr<BenchCluster> cluster_;
  RecordSet records_;
  ClientSettings settings_;
  std::int64_t end_offsets_ = -1;  // last checked sum; -1 = not checked yet
  std::int64_t lost_records_ = 0, duplicate_records_ = 0;
};

}  // namespace kbench::bench::produce
