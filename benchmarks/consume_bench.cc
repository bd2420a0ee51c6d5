// Consume family: consumer throughput reading a topic back, as kafka-consumer-perf-test
// reports it (records/s = nMsg.sec, value bytes/s = MB.sec). Default rows: 100- and
// 1000-byte records on 4 partitions; --consume SPEC runs any matrix of record size,
// payload, partitions, replication and record count instead, or reads an existing topic
// (topic=NAME, live clusters only: what another tool wrote, so both read the same records).
//
// Timed (real time, UseRealTime): one iteration is a steady-state window of --window-seconds
// (after --warmup-seconds of the same reading, untimed), in which the consumer reads the
// topic from offset 0 to its end and again, pass after pass (each pass seeks every partition
// back to 0); records/s counts what was read within the window, and the JSON holds its
// per-second interval samples. There is no group rebalance (manual assignment), so this is
// perf-test's fetch.nMsg.sec with rebalance.time.ms = 0. Where the fetches waited (socket
// buffer, round trip, throttle) comes from librdkafka's statistics over the window.
// Not timed: cluster and topic setup, filling the topic (acks=all, one producer),
// creating and connecting the consumer.
// Verified, per partition (sums would let a loss in one partition and a duplicate in
// another cancel out): the fill was delivered in full; each partition's end offset equals
// the records delivered to it; an untimed first read (which also opens the connections)
// returns exactly those records, each key and value at its offset (a digest of (offset,
// key, value) against the one summed from the fill's delivery reports); each pass of a
// window returns offsets 0..n-1 of every partition once and in order, and nothing beyond. The
// benchmark fails otherwise, naming the partition and the expected and read counts. The
// timed windows make the same per-record offset check in every pass (no digest there).

#include <array>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "fixtures/cluster.h"
#include "fixtures/counters.h"
#include "fixtures/family.h"
#include "fixtures/matrix_spec.h"
#include "fixtures/options.h"
#include "fixtures/runner.h"
#include "fixtures/settings_lens.h"
#include "fixtures/stage_counters.h"
#include "fixtures/window.h"
#include "harness/consumer.h"
#include "harness/partition_check.h"
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
  static constexpr std::string_view kFlag = "--consume";
  SizeSpec record_bytes;
  PayloadSpec payload;
  int partitions = kPartitions;
  int replication = 1;
  std::int64_t records = 0;  // written once; 0: the default for the target
  std::uint64_t seed = 0;
  // topic=NAME: read this existing topic (live cluster) instead of writing one, e.g. the
  // topic kafka-producer-perf-test wrote, so both tools' consumers read the same records.
  std::string topic;
  bool layout_given = false;  // a key that shapes kbench's own topic was set
  ClusterRun run;             // the command line's cluster, settings, window; not in the name
  std::string not_run;        // why the loaded librdkafka cannot run it (fixtures/runner.h)
};

// ------------------------------------------------------------------ the axes

constexpr std::string_view kTopicChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";

// One row per --consume key, in the order keys appear in names (keys beyond the defaults'
// appear only when set, so default rows keep their names; none maps to client settings).
// Every key but topic shapes the topic kbench writes (layout_given).
using ConsumeAxis = AxisRow<ConsumeParams>;

const std::vector<ConsumeAxis>& ConsumeAxes() {
  static const std::vector<ConsumeAxis> axes = {
      {"topic", "read this existing topic of a live cluster as it is, instead of writing one",
       [](ConsumeParams& p, std::string_view, std::string_view v) {
         // Kafka's legal topic characters; '/' and ':' would also break the benchmark name.
         if (v.empty() || v.size() > 249 ||
             v.find_first_not_of(kTopicChars) != std::string_view::npos) {
           throw UsageError("--consume: topic='" + std::string(v) +
                            "' is not a Kafka topic name (1-249 of a-z A-Z 0-9 . _ -)");
         }
         p.topic = v;
       },
       [](const ConsumeParams& p, std::string_view k, BenchName& n) {
         if (!p.topic.empty()) n.Add(k, p.topic);
       },
       nullptr, nullptr},
      {"record_bytes", "value size, fixed or a range (default 100 and 1000)",
       [](ConsumeParams& p, std::string_view, std::string_view v) {
         p.record_bytes = ParseSizeSpec(v);
       },
       [](const ConsumeParams& p, std::string_view k, BenchName& n) {
         n.Add(k, p.record_bytes.Name());
       },
       nullptr, nullptr},
      {"partitions", "partitions of the topic (default {})",
       ParseIntAxis<&ConsumeParams::partitions, 1, 10000>, NameAlways<&ConsumeParams::partitions>,
       nullptr, AxisValue<&ConsumeParams::partitions>},
      {"payload", "a --payload kind (default {})",
       [](ConsumeParams& p, std::string_view, std::string_view v) {
         p.payload = ParsePayloadSpec(v);
       },
       [](const ConsumeParams& p, std::string_view k, BenchName& n) {
         if (p.payload.Name() != kPayload) n.Add(k, p.payload.Name());
       },
       nullptr, AxisValue<&ConsumeParams::payload>},
      {"replication", "replication factor of the topic (default {})",
       ParseIntAxis<&ConsumeParams::replication, 1, 32>, NameIfChanged<&ConsumeParams::replication>,
       nullptr, AxisValue<&ConsumeParams::replication>},
      {"records",
       "records written once, read back every iteration (default 50000 mock, at most 4 MiB; "
       "200000 live)",
       ParseIntAxis<&ConsumeParams::records, 1, 2000000000>,
       [](const ConsumeParams& p, std::string_view k, BenchName& n) {
         if (p.records > 0) n.Add(k, p.records);
       },
       nullptr, nullptr},
  };
  return axes;
}

BenchName Name(const ConsumeParams& p) {
  BenchName name("Consume", "read");
  if (!p.topic.empty()) return name.Add("topic", p.topic);  // its layout is the topic's
  AddAxisNames(ConsumeAxes(), p, name);
  return name;
}

FamilyKeys ConsumeKeys() { return AxisKeys("--consume", ConsumeAxes()); }

// The fill's producer settings, batch.size as the loaded librdkafka takes it (before 1.5.0:
// batch.num.messages; fixtures/settings_lens.h).
ClientSettings FillSettings(const ConsumeParams& p) {
  ClientSettings s = {
      {"acks", "all"}, {"linger.ms", "5"}, {"batch.size", std::to_string(kFillBatchBytes)}};
  ApplySettingsLens(SettingsLens::kSame, p.record_bytes.mean(), s);
  return s;
}

// ------------------------------------------------------------------ work

class ConsumeWork {
 public:
  static StatusOr<std::unique_ptr<ConsumeWork>> Create(const ConsumeParams& p) {
    StatusOr<std::unique_ptr<BenchCluster>> cluster =
        p.topic.empty() ? BenchCluster::Create(p.run, *p.run.state, "consume",
                                               TopicLayout{p.partitions, p.replication})
                        : BenchCluster::Create(p.run, ExistingTopic{p.topic});
    if (!cluster) return cluster.status();
    std::unique_ptr<ConsumeWork> work(new ConsumeWork(p, std::move(*cluster)));
    if (p.topic.empty()) {
      if (Status s = work->Fill(p); !s) return s;
    }
    auto consumer =
        ConsumerDriver::Create(MergeSettings({{"bootstrap.servers", work->cluster_->bootstrap()}},
                                             work->run_.client_settings, {}, *work->run_.state),
                               work->cluster_->topic(), work->cluster_->layout().partitions);
    if (!consumer) return consumer.status();
    work->consumer_ = std::move(*consumer);
    return work;
  }

  Status Verify() {
    if (!fill_error_.ok()) return Status::Error("fill: " + fill_error_.message());
    StatusOr<std::vector<std::int64_t>> read_ends = cluster_->EndOffsets();
    if (!read_ends) return read_ends.status();
    const std::vector<std::int64_t>& ends = *read_ends;
    if (!filled_) {
      // Someone else's topic: its end offsets are what must come back (from offset 0: a
      // log that starts later fails the read, auto.offset.reset being "error").
      expected_.counts = ends;
      count_ = TotalCount(ends);
      if (count_ == 0) return Status::Error("topic " + cluster_->topic() + " is empty");
    } else if (PartitionComparison c =
                   ComparePartitionCounts(expected_.counts, ends, "delivered", "end offset");
               !c.equal()) {
      return Status::Error(
          "fill: topic end offsets differ from the records delivered, per partition: " + c.detail);
    }
    // One untimed read: connects to every partition leader and checks every record (its
    // key and value too when kbench wrote them).
    ConsumeResult r;
    if (Status s = consumer_->ReadAll(expected_, kReadIdleTimeout, &r); !s) return s;
    value_bytes_ = r.value_bytes;
    // Timed reads check offsets only: hashing every value is work a consumer benchmark
    // must not time.
    expected_.digests.clear();
    return Status::Ok();
  }

  // Reading starts and runs through warmup_seconds before the window opens.
  Status BeginRun() {
    cursor_ = {};
    read_window_ = {};
    window_.Reset();
    const auto warm_end =
        WindowSchedule::Clock::now() + std::chrono::duration_cast<WindowSchedule::Clock::duration>(
                                           std::chrono::duration<double>(run_.warmup_seconds));
    Status s =
        consumer_->ReadUntil(expected_.counts, warm_end, kReadIdleTimeout, &cursor_, nullptr);
    return s.ok() ? s : Status::Error("warm-up read: " + s.message());
  }

  void Iterate() {
    if (!error_.ok()) return;
    if (window_.Open()) {
      read_window_.origin = window_.origin();
      read_window_.interval = window_.interval();
      stats_begin_ = consumer_->StatsSnapshot();
    }
    Status s = consumer_->ReadUntil(expected_.counts, window_.Next(), kReadIdleTimeout, &cursor_,
                                    &read_window_);
    if (!s) error_ = s;
  }

  // Set in Report from what was read within the window.
  std::int64_t items_per_iteration() const { return 0; }
  std::int64_t bytes_per_iteration() const { return 0; }

  void Report(benchmark::State& state) {
    if (!error_.ok()) {
      state.SkipWithError(error_.message().c_str());
      return;
    }
    const double width = std::chrono::duration<double>(window_.interval()).count();
    const auto n = static_cast<std::size_t>(std::max(1L, std::lround(window_.seconds() / width)));
    std::int64_t records = 0, bytes = 0;
    intervals_ = IntervalSeries{};
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t r = i < read_window_.records.size() ? read_window_.records[i] : 0;
      const std::int64_t b = i < read_window_.value_bytes.size() ? read_window_.value_bytes[i] : 0;
      records += r;
      bytes += b;
      intervals_.seconds.push_back(width);
      intervals_.records_per_second.push_back(static_cast<double>(r) / width);
      intervals_.mb_per_second.push_back(static_cast<double>(b) / width / (1024.0 * 1024.0));
    }
    state.SetItemsProcessed(records);
    state.SetBytesProcessed(bytes);
    state.counters[counters::kIntervalCv] = counters::Value(intervals_.RecordsPerSecondCv());
    state.counters[counters::kWindowSeconds] = counters::Value(window_.seconds());
    // Where the fetches waited in the window (emits lag both ends alike, by at most 100 ms).
    StatsDelta fetches;
    fetches.stages = consumer_->StagesBetween(stats_begin_, consumer_->StatsSnapshot());
    ReportStages(state, fetches);
  }
  const IntervalSeries& intervals() const { return intervals_; }

 private:
  ConsumeWork(const ConsumeParams& p, std::unique_ptr<BenchCluster> cluster)
      : cluster_(std::move(cluster)), run_(p.run), window_(p.run.window_seconds) {}

  // Writes the topic once (acks=all, one producer), summing each partition's digest. An
  // error here is a set-up failure; records that went missing are fill_error_, for Verify.
  Status Fill(const ConsumeParams& p) {
    if (p.records > 0) {
      count_ = p.records;
    } else if (cluster_->is_mock()) {
      count_ = std::min<std::int64_t>(
          kFillRecordsMock, kMockFillBytes / static_cast<std::int64_t>(p.record_bytes.max));
    } else {
      count_ = kFillRecordsLive;
    }
    RecordSet records = PayloadGenerator(p.payload, p.record_bytes, p.seed).Generate(4096);
    ProducerOptions o;
    o.settings = MergeSettings({{"bootstrap.servers", cluster_->bootstrap()},
                                {"statistics.interval.ms", "1000"},
                                {"message.timeout.ms", "30000"}},
                               run_.client_settings, FillSettings(p), *run_.state);
    o.topic = cluster_->topic();
    o.progress_label = Name(p).str() + " (fill)";
    o.digest_records = true;
    auto made = ProducerDriver::Create(o, records);
    if (!made) return made.status();
    std::unique_ptr<ProducerDriver> producer = std::move(*made);
    producer->BeginMeasurement();
    Status s = producer->RunRound(count_);
    ProduceTotals t = producer->Collect();
    fill_error_ = s.ok() ? t.AccountingError() : s;
    expected_.counts = t.delivered_per_partition;
    expected_.digests = t.digest_per_partition;
    filled_ = true;
    return Status::Ok();
  }

  std::unique_ptr<BenchCluster> cluster_;
  ClusterRun run_;
  WindowSchedule window_;
  bool filled_ = false;  // kbench wrote the topic (else: an existing topic, topic=NAME)
  std::int64_t count_ = 0;
  std::int64_t value_bytes_ = 0;
  ExpectedRecords expected_;  // per partition, from the fill's delivery reports
  Status fill_error_;
  Status error_;
  std::unique_ptr<ConsumerDriver> consumer_;
  ConsumerDriver::Cursor cursor_;
  ConsumerDriver::Window read_window_;
  StatsAccumulator::Snapshot stats_begin_;
  IntervalSeries intervals_;
};

// ------------------------------------------------------------------ registration

void Register(BenchSession& session, ConsumeParams p) {
  p.not_run = MockNotRunReason(p.run, CodecSpec{});
  RegisterWork<ConsumeWork>(session, Name(p), p)->UseRealTime();
  session.NoteRegisteredName(Name(p).str() + "/real_time");  // the name as reported and filtered
}

// ------------------------------------------------------------------ --consume

void ApplyConsumeSetting(ConsumeParams& p, std::string_view key, std::string_view value) {
  FindAxis("--consume", ConsumeAxes(), key).parse(p, key, value);
  if (key != "topic") p.layout_given = true;
}

// The mock cluster drops the oldest data beyond 5 MiB per partition, and a small fill may
// land in one partition, so a mock fill must stay under kMockFillBytes to read back whole.
void CheckMockFill(const ConsumeParams& p) {
  if (p.records > 0 && p.records > kMockFillBytes / static_cast<std::int64_t>(p.record_bytes.max)) {
    throw UsageError("--consume: records=" + std::to_string(p.records) + " of up to " +
                     std::to_string(p.record_bytes.max) +
                     " bytes is more than the in-process mock cluster keeps (4 MiB); use a live "
                     "cluster (--bootstrap) or fewer records");
  }
}

void RegisterConsumeFamily(const Options& options, BenchSession& session) {
  if (!options.consume_specs.empty()) {
    ConsumeParams base;
    base.record_bytes = SizeSpec{kRecordBytes[0], kRecordBytes[0]};
    base.payload = ParsePayloadSpec(kPayload);
    if (!options.record_sizes.empty()) base.record_bytes = options.record_sizes.front();
    if (!options.payloads.empty()) base.payload = options.payloads.front();
    base.seed = options.payload_seed;
    base.run = ClusterRunOf(options, session.run_state());
    for (const auto& spec : options.consume_specs) {
      for (const ConsumeParams& p :
           ExpandMatrixSpec("--consume", spec, base, ApplyConsumeSetting)) {
        if (!p.topic.empty() && options.bootstrap.empty()) {
          throw UsageError("--consume: topic=" + p.topic +
                           " reads an existing topic: it needs a live cluster (--bootstrap)");
        }
        if (!p.topic.empty() && p.layout_given) {
          throw UsageError("--consume: topic=" + p.topic +
                           " reads the topic as it is; record_bytes, payload, partitions, "
                           "replication and records describe a topic kbench writes");
        }
        if (options.bootstrap.empty()) CheckMockFill(p);
        Register(session, p);
      }
    }
    return;
  }
  std::vector<SizeSpec> sizes;
  if (options.record_sizes.empty()) {
    for (std::size_t n : kRecordBytes) sizes.push_back(SizeSpec{n, n});
  } else {
    sizes = options.record_sizes;
  }
  PayloadSpec payload =
      options.payloads.empty() ? ParsePayloadSpec(kPayload) : options.payloads.front();
  for (const auto& size : sizes) {
    ConsumeParams p;
    p.record_bytes = size;
    p.payload = payload;
    p.seed = options.payload_seed;
    p.run = ClusterRunOf(options, session.run_state());
    Register(session, p);
  }
}

}  // namespace

constexpr FamilyAbout kConsumeAbout{
    "consumer throughput reading a filled topic back, as kafka-consumer-perf-test "
    "reports it",
    "Consume/read/record_bytes:100/partitions:4/real_time"};
KBENCH_REGISTER_FAMILY(Consume, RegisterConsumeFamily, FamilyTarget::kCluster, kConsumeAbout,
                       ConsumeKeys);

}  // namespace kbench::bench
