// Consume family: consumer throughput reading a topic back, as kafka-consumer-perf-test
// reports it (records/s = nMsg.sec, value bytes/s = MB.sec).
//
// Timed (real time, UseRealTime): one iteration assigns every partition at offset 0 and
// reads until every record written has arrived. There is no group rebalance (manual
// assignment), so this is perf-test's fetch.nMsg.sec with rebalance.time.ms = 0.
// Not timed: cluster and topic setup, filling the topic (acks=all, one producer),
// creating and connecting the consumer.
// Verified: the fill was delivered in full, the end offsets equal the count written and an
// untimed first read (which also opens the connections) returns them all; each timed read
// returns exactly that many records, or the benchmark fails naming how many arrived.

#include <array>
#include <chrono>
#include <string>

#include <benchmark/benchmark.h>

#include "fixtures/cluster.h"
#include "fixtures/counters.h"
#include "fixtures/family.h"
#include "fixtures/options.h"
#include "fixtures/runner.h"
#include "harness/consumer.h"
#include "harness/payload.h"
#include "harness/producer.h"

namespace kbench::bench {
namespace {

// ------------------------------------------------------------------ parameters

constexpr std::array<std::size_t, 2> kRecordBytes = {100, 1000};
constexpr int kPartitions = 4;
constexpr std::string_view kPayload = "az";
// Records written once per benchmark. The mock keeps at most 5 MiB per partition and
// drops the oldest batches beyond that; librdkafka's sticky partitioner may put most of a
// small fill into one partition, so the whole mock fill stays below 5 MiB.
constexpr std::int64_t kFillRecordsMock = 50000;
constexpr std::int64_t kMockFillBytes = 4 << 20;
constexpr std::int64_t kFillRecordsLive = 200000;
// Batches of the fill: well below the consumer's default per-partition fetch size (1 MiB),
// which the mock cluster does not exceed to hand out an oversized first batch.
constexpr int kFillBatchBytes = 128 * 1024;
constexpr auto kReadIdleTimeout = std::chrono::seconds(10);

struct ConsumeParams {
  SizeSpec record_bytes;
  PayloadSpec payload;
  int partitions;
  std::uint64_t seed;
};

BenchName Name(const ConsumeParams& p) {
  BenchName name("Consume", "read");
  name.Add("record_bytes", p.record_bytes.Name()).Add("partitions", p.partitions);
  if (p.payload.Name() != kPayload) name.Add("payload", p.payload.Name());
  return name;
}

// ------------------------------------------------------------------ work

class ConsumeWork {
 public:
  explicit ConsumeWork(const ConsumeParams& p)
      : cluster_(GlobalOptions(), "consume", TopicLayout{p.partitions, 1}),
        records_(PayloadGenerator(p.payload, p.record_bytes, p.seed).Generate(4096)) {
    if (cluster_.is_mock()) {
      count_ = std::min<std::int64_t>(
          kFillRecordsMock, kMockFillBytes / static_cast<std::int64_t>(p.record_bytes.max));
    } else {
      count_ = kFillRecordsLive;
    }
    ProducerOptions o;
    o.settings = MergeSettings(
        {{"bootstrap.servers", cluster_.bootstrap()},
         {"statistics.interval.ms", "1000"},
         {"message.timeout.ms", "30000"}},
        GlobalOptions().client_settings,
        {{"acks", "all"}, {"linger.ms", "5"}, {"batch.size", std::to_string(kFillBatchBytes)}});
    o.topic = cluster_.topic();
    o.progress_label = Name(p).str() + " (fill)";
    std::string error;
    auto producer = ProducerDriver::Create(o, records_, &error);
    if (!producer) throw std::runtime_error(error);
    producer->BeginMeasurement();
    Status s = producer->RunRound(count_);
    ProduceTotals t = producer->Collect();
    fill_error_ = s.ok() ? t.AccountingError() : s.message();
    value_bytes_ = t.delivered_bytes;
    consumer_ = ConsumerDriver::Create(MergeSettings({{"bootstrap.servers", cluster_.bootstrap()}},
                                                     GlobalOptions().client_settings, {}),
                                       cluster_.topic(), p.partitions, &error);
    if (!consumer_) throw std::runtime_error(error);
  }

  std::string Verify() {
    if (!fill_error_.empty()) return "fill: " + fill_error_;
    std::int64_t end = 0;
    if (Status s = cluster_.EndOffsetSum(&end); !s) return s.message();
    if (end != count_) {
      return "fill: end offsets sum to " + std::to_string(end) + ", wrote " +
             std::to_string(count_);
    }
    // One untimed read: connects to every partition leader and checks the count.
    ConsumeResult r;
    if (Status s = consumer_->ReadAll(count_, kReadIdleTimeout, &r); !s) return s.message();
    return "";
  }

  void Iterate() {
    if (!error_.empty()) return;
    ConsumeResult r;
    if (Status s = consumer_->ReadAll(count_, kReadIdleTimeout, &r); !s) error_ = s.message();
  }

  std::int64_t items_per_iteration() const { return count_; }
  std::int64_t bytes_per_iteration() const { return value_bytes_; }

  void Report(benchmark::State& state) {
    if (!error_.empty()) state.SkipWithError(error_.c_str());
  }

 private:
  BenchCluster cluster_;
  RecordSet records_;
  std::int64_t count_ = 0;
  std::int64_t value_bytes_ = 0;
  std::string fill_error_;
  std::string error_;
  std::unique_ptr<ConsumerDriver> consumer_;
};

// ------------------------------------------------------------------ registration

void RegisterConsumeFamily(const Options& options) {
  std::vector<SizeSpec> sizes;
  if (options.record_sizes.empty()) {
    for (std::size_t n : kRecordBytes) sizes.push_back(SizeSpec{n, n});
  } else {
    sizes = options.record_sizes;
  }
  PayloadSpec payload =
      options.payloads.empty() ? ParsePayloadSpec(kPayload) : options.payloads.front();
  for (const auto& size : sizes) {
    ConsumeParams p{size, payload, kPartitions, options.payload_seed};
    RegisterWork<ConsumeWork>(Name(p), p)->UseRealTime();
    NoteRegisteredName(Name(p).str() + "/real_time");  // the name as reported and filtered
  }
}

}  // namespace

KBENCH_REGISTER_FAMILY(Consume, RegisterConsumeFamily);

}  // namespace kbench::bench
