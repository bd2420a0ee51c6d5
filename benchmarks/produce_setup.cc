// The Produce rows' untimed set-up and end-offset check (produce_setup.h).

#include "benchmarks/produce_setup.h"

#include "fixtures/counters.h"

namespace kbench::bench::produce {
namespace {

// Records per iteration: large enough that batching reaches a steady state and thread
// start-up is noise, small enough that --benchmark_min_time=0.01 stays quick.
constexpr std::int64_t kRecordsPerIterationMock = 20000;
constexpr std::int64_t kRecordsPerIterationLive = 100000;
// How long the end-offset check waits for followers to advance the high watermark.
constexpr std::chrono::seconds kEndOffsetWait{15};

// kbench's own client defaults (before the user's settings): statistics for the counters,
// and a message timeout short enough that a dead broker fails a benchmark in seconds
// rather than librdkafka's 5 minutes.
ClientSettings DriverDefaults() {
  return {{"statistics.interval.ms", "100"}, {"message.timeout.ms", "30000"}};
}

}  // namespace

std::int64_t RecordsPerIteration(const ClusterRun& run) {
  if (run.records_per_iteration > 0) return run.records_per_iteration;
  return run.bootstrap.empty() ? kRecordsPerIterationMock : kRecordsPerIterationLive;
}

StatusOr<std::unique_ptr<BenchCluster>> ProduceSetup::CreateCluster(const ProduceParams& p) {
  return BenchCluster::Create(p.run, *p.run.state, "produce",
                              TopicLayout{p.partitions, p.replication, TopicConfigs(p)});
}

ProduceSetup::ProduceSetup(const ProduceParams& p, std::unique_ptr<BenchCluster> cluster)
    : params_(p),
      cluster_(std::move(cluster)),
      records_(PayloadGenerator(p.payload, p.record_bytes, p.seed).GenerateSendRecords(p.records)) {
  records_.DrawKeys(p.keys, p.seed);
  // The user's settings sit between kbench's defaults and the benchmark's parameters.
  ClientSettings defaults = {{"bootstrap.servers", cluster_->bootstrap()}};
  for (auto& kv : DriverDefaults()) defaults.push_back(std::move(kv));
  settings_ = MergeSettings(defaults, p.run.client_settings, BenchmarkSettings(p), *p.run.state);
}

Status ProduceSetup::CheckEndOffsets(const PartitionCounts& delivered,
                                     const PartitionCounts& markers) {
  if (cluster_->is_mock()) return CheckExpectedEndOffsets(delivered, "delivered");
  PartitionCounts expected = delivered;
  AddCounts(expected, markers);
  return CheckExpectedEndOffsets(expected, markers.empty() ? "delivered" : "delivered+markers");
}

Status ProduceSetup::CheckExpectedEndOffsets(const PartitionCounts& delivered, const char* what) {
  StatusOr<std::vector<std::int64_t>> ends = cluster_->AwaitEndOffsets(delivered, kEndOffsetWait);
  if (!ends) return ends.status();
  end_offsets_ = TotalCount(*ends);
  PartitionComparison c = ComparePartitionCounts(delivered, *ends, what, "end offset");
  lost_records_ = c.lost;
  duplicate_records_ = c.duplicated;
  return EndOffsetError(c, params_.run.allow_loss);
}

void ProduceSetup::ReportEndOffsets(benchmark::State& state, std::int64_t delivered_total) const {
  state.counters[counters::kDeliveredRecords] =
      counters::Value(static_cast<double>(delivered_total));
  state.counters[counters::kEndOffsets] = counters::Value(static_cast<double>(end_offsets_));
  state.counters[counters::kLostRecords] = counters::Value(static_cast<double>(lost_records_));
  state.counters[counters::kDuplicateRecords] =
      counters::Value(static_cast<double>(duplicate_records_));
}

}  // namespace kbench::bench::produce
