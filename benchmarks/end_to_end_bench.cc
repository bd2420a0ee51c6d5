// EndToEnd family: the latency a record takes from its producer to a consumer's hands, the
// headline figure of OpenMessaging Benchmark and of Kafka's own end-to-end latency test.
// A producer sends at a fixed rate (open loop: one schedule from the start of the warm-up
// to the window's end, linger.ms 0) while a consumer in the same process reads the same
// topic as records arrive. Each record carries its intended send time (steady clock of
// this host, in a header), so latency = receipt - intended send time, pauses included (no
// coordinated omission); both ends read one clock, which the context states.
//
// Timed (real time): a steady-state window of --window-seconds (longer at low rates: at least
// 5,000 records, so that p99 rests on 50, fixtures/window.h) after --warmup-seconds of the
// same load, as Produce rows. records/s counts records delivered within the window.
// Latency: p50_us ... max_us are end to end, of the records intended within the window,
// from a mergeable log-linear histogram (harness/histogram.h), per-interval p99 in the
// JSON; delivery_p50_us / delivery_p99_us are the delivery-report latency of the same
// records, so the two legs compare within one row. librdkafka's stage percentiles
// (int_latency, outbuf_latency, rtt, throttle) place the producer's part.
// Not timed: cluster and topic setup, connections, payload generation, the drain. Records
// are distinct over more than the row's batches hold (harness/payload.h: PlanSendRecords).
// Verified: every record produced was delivered (delivery reports) and received exactly
// once (each partition's offsets arrive once and in order from 0, and the count received
// per partition equals the count delivered to it, which equals its end offset); the codec
// asked for went on the wire. Any failure fails the row with SkipWithError.
//
// Axes: acks (1, all), codec, record size, rate, partitions (`--end-to-end SPEC`).

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
#include "fixtures/producer_counters.h"
#include "fixtures/rate_search.h"
#include "fixtures/run_context.h"
#include "fixtures/runner.h"
#include "fixtures/settings_lens.h"
#include "fixtures/stage_counters.h"
#include "fixtures/target.h"
#include "fixtures/window.h"
#include "harness/latency_consumer.h"
#include "harness/partition_check.h"
#include "harness/payload.h"
#include "harness/producer.h"

namespace kbench::bench {
namespace {

// ------------------------------------------------------------------ parameters

// librdkafka's batch.size when -X does not set it (the row's records are planned for it).
constexpr std::size_t kDefaultBatchSize = 1000000;
constexpr std::chrono::seconds kEndOffsetWait{15};
// Records still in flight when the window closes arrive during the drain; a consumer that
// has not received them after this long has lost them.
constexpr std::chrono::milliseconds kReceiveTimeout{30000};

struct EndToEndParams {
  static constexpr std::string_view kFlag = "--end-to-end";
  std::string_view acks = "1";  // static strings only
  CodecSpec codec{};
  SizeSpec record_bytes{100, 100};
  PayloadSpec payload{};
  std::int64_t rate = 10000;  // records/s
  int partitions = 2;
  std::uint64_t seed = kDefaultPayloadSeed;
  SettingsLens lens = SettingsLens::kSame;  // fixtures/settings_lens.h
  ClusterRun run;             // the command line's cluster, settings, window; not in the name
  SendRecordsPlan records{};  // planned at registration (Register)
  std::string not_run;        // why the loaded librdkafka cannot run it (fixtures/runner.h)
};

// One row per --end-to-end key, in the order keys appear in names (fixtures/matrix_spec.h);
// keys without settings are taken by the topic or the schedule.
using EndToEndAxis = AxisRow<EndToEndParams>;

const std::vector<EndToEndAxis>& EndToEndAxes() {
  static const std::vector<EndToEndAxis> axes = {
      {"acks", "1 or all (acks=0 has no delivered offsets to check receipt against; default {})",
       [](EndToEndParams& p, std::string_view, std::string_view v) {
         if (v == "1") {
           p.acks = "1";
         } else if (v == "all" || v == "-1") {
           p.acks = "all";
         } else {
           throw UsageError(
               "--end-to-end: acks must be 1 or all (acks=0 has no delivered "
               "offsets to check receipt against), not '" +
               std::string(v) + "'");
         }
       },
       [](const EndToEndParams& p, std::string_view k, BenchName& n) { n.Add(k, p.acks); },
       [](const EndToEndParams& p, ClientSettings& s) { s.emplace_back("acks", p.acks); },
       AxisValue<&EndToEndParams::acks>},
      {"codec", "a codec librdkafka writes, optionally :LEVEL (default {})",
       [](EndToEndParams& p, std::string_view, std::string_view v) {
         p.codec = ParseCodecSpec(v);
         if (Status s = LibrdkafkaCanWrite(p.codec); !s)
           throw UsageError("--end-to-end: " + s.message());
       },
       [](const EndToEndParams& p, std::string_view k, BenchName& n) {
         n.Add(k, p.codec.Name());
         if (p.codec.level != 0) n.Add("level", p.codec.level);
       },
       [](const EndToEndParams& p, ClientSettings& s) {
         s.emplace_back("compression.codec", p.codec.info().librdkafka_name);
         s.emplace_back("compression.level",
                        p.codec.level == 0 ? "-1" : std::to_string(p.codec.level));
       },
       AxisValue<&EndToEndParams::codec>},
      {"record_bytes", "value size, fixed (100) or a range (250-750) (default {})",
       [](EndToEndParams& p, std::string_view, std::string_view v) {
         p.record_bytes = ParseSizeSpec(v);
       },
       [](const EndToEndParams& p, std::string_view k, BenchName& n) {
         n.Add(k, p.record_bytes.Name());
       },
       nullptr, AxisValue<&EndToEndParams::record_bytes>},
      {"rate", "offered load in records/s, open loop (default {})",
       ParseIntAxis<&EndToEndParams::rate, 1, 100000000>, NameAlways<&EndToEndParams::rate>,
       nullptr, AxisValue<&EndToEndParams::rate>},
      {"partitions", "partitions of the topic (default {})",
       ParseIntAxis<&EndToEndParams::partitions, 1, 10000>, NameAlways<&EndToEndParams::partitions>,
       nullptr, AxisValue<&EndToEndParams::partitions>},
      {"payload", "a --payload kind (default {})",
       [](EndToEndParams& p, std::string_view, std::string_view v) {
         p.payload = ParsePayloadSpec(v);
       },
       [](const EndToEndParams& p, std::string_view k, BenchName& n) {
         if (p.payload.Name() != PayloadSpec{}.Name()) n.Add(k, p.payload.Name());
         if (p.records.cycles()) n.Add("repeats", "allowed");
       },
       nullptr, AxisValue<&EndToEndParams::payload>},
      {"settings",
       "same (linger.ms 0, pinned) or shipped (linger.ms, batch.size, max.in.flight and Nagle "
       "at the loaded release's defaults) (default: same)",
       [](EndToEndParams& p, std::string_view, std::string_view v) {
         p.lens = ParseSettingsLens("--end-to-end", v);
       },
       [](const EndToEndParams& p, std::string_view k, BenchName& n) {
         if (p.lens != SettingsLens::kSame) n.Add(k, LensName(p.lens));
       },
       nullptr},
  };
  return axes;
}

// The default rows, as --end-to-end specs: one per axis value around a modest load (10,000
// records/s of 100 bytes: far below what one producer sustains here, so latency, not
// throughput, varies).
constexpr std::array<std::string_view, 5> kDefaultRows = {
    "acks=1|all,codec=none,record_bytes=100,rate=10000,partitions=2",
    "acks=1,codec=lz4|zstd,record_bytes=1000,rate=10000,partitions=2",
    "acks=1,codec=none,record_bytes=100,rate=1000,partitions=2",
    "acks=1,codec=none,record_bytes=100,rate=50000,partitions=2",
    "acks=1,codec=none,record_bytes=100,rate=10000,partitions=16",
};

BenchName Name(const EndToEndParams& p) {
  BenchName name("EndToEnd", "latency");
  AddAxisNames(EndToEndAxes(), p, name);
  return name;
}

// The producer's settings from the axes that map to settings.
ClientSettings PinnedSettings(const EndToEndParams& p) {
  ClientSettings s = AxisSettings(EndToEndAxes(), p);
  s.emplace_back("linger.ms", "0");
  return s;
}

// The producer's settings as the row's lens takes them (fixtures/settings_lens.h).
ClientSettings BenchmarkSettings(const EndToEndParams& p) {
  ClientSettings s = PinnedSettings(p);
  ApplySettingsLens(p.lens, p.record_bytes.mean(), s);
  return s;
}

// What the lens changed, for the row's label.
std::string SettingsNote(const EndToEndParams& p) {
  ClientSettings s = PinnedSettings(p);
  return ApplySettingsLens(p.lens, p.record_bytes.mean(), s);
}

FamilyKeys EndToEndKeys() { return AxisKeys("--end-to-end", EndToEndAxes()); }

std::chrono::steady_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

// ------------------------------------------------------------------ work

class EndToEndWork {
 public:
  static StatusOr<std::unique_ptr<EndToEndWork>> Create(const EndToEndParams& p) {
    StatusOr<std::unique_ptr<BenchCluster>> cluster =
        BenchCluster::Create(p.run, *p.run.state, "end_to_end", TopicLayout{p.partitions, 1});
    if (!cluster) return cluster.status();
    std::unique_ptr<EndToEndWork> work(new EndToEndWork(p, std::move(*cluster)));
    const BenchCluster& c = *work->cluster_;
    // A broker answers a consumer's fetch as soon as a byte is there, so the long poll of
    // fetch.wait.max.ms (librdkafka's 500 ms, set explicitly) adds nothing to the latency;
    // the mock cluster holds an empty fetch for the whole wait instead (end-to-end p50 of a
    // second here), so on the mock it is 10 ms.
    ClientSettings consumer_settings = {{"fetch.wait.max.ms", c.is_mock() ? "10" : "500"}};
    for (const auto& kv : c.BaseSettings()) consumer_settings.push_back(kv);
    auto consumer = LatencyConsumer::Create(consumer_settings, c.topic(), p.partitions);
    if (!consumer) return consumer.status();
    work->consumer_ = std::move(*consumer);
    ProducerOptions o;
    o.settings = MergeSettings({{"bootstrap.servers", c.bootstrap()},
                                {"statistics.interval.ms", "100"},
                                {"message.timeout.ms", "30000"}},
                               p.run.client_settings, BenchmarkSettings(p), *p.run.state);
    o.topic = c.topic();
    o.rate = static_cast<double>(p.rate);
    o.stamp_send_time = true;
    o.progress_label = Name(p).str();
    auto driver = ProducerDriver::Create(o, work->records_);
    if (!driver) return driver.status();
    work->driver_ = std::move(*driver);
    return work;
  }

  // A short round at the row's rate doubles as the check that the whole path works: every
  // record delivered, in the topic, and received.
  Status Verify() {
    driver_->BeginMeasurement();
    Status s = driver_->RunRound(std::max<std::int64_t>(params_.rate / 10, 1));
    if (Status e = Account(s); !e) return Status::Error("warm-up: " + e.message());
    return Status::Ok();
  }

  Status BeginRun() {
    if (!error_.ok()) return error_;
    driver_->BeginMeasurement();
    driver_->Start();
    driver_->WaitUntil(WindowSchedule::Clock::now() + Seconds(params_.run.warmup_seconds));
    window_.Reset();
    return Status::Ok();
  }

  void Iterate() {
    if (window_.Open()) {
      driver_->OpenWindow(window_.origin(), window_.interval());
      consumer_->OpenWindow(window_.origin(), window_.interval());
    }
    driver_->WaitUntil(window_.Next());
  }

  std::int64_t items_per_iteration() const { return 0; }
  std::int64_t bytes_per_iteration() const { return 0; }
  std::int64_t inflight_records() const { return driver_->InFlight(); }

  void Report(benchmark::State& state) {
    Status stopped = driver_->Stop();
    MeasuredWindow w = driver_->CloseWindow(window_.end());
    Status error = error_.ok() ? Account(stopped) : error_;
    const LatencyHistogram e2e = consumer_->WindowLatency(window_.end());
    if (error.ok() && e2e.count() == 0)
      error = Status::Error("no record of the window was received");
    if (!error.ok()) {
      error_ = error;
      state.SkipWithError(error.message().c_str());
      return;
    }
    state.SetItemsProcessed(w.records);
    state.SetBytesProcessed(w.value_bytes);
    if (std::string note = SettingsNote(params_); !note.empty()) state.SetLabel(note);
    auto set = [&state](const char* name, double v) { state.counters[name] = counters::Value(v); };
    auto us = [](std::uint64_t v) { return static_cast<double>(v); };
    ReportLatency(state, e2e, /*open_loop=*/true);
    set(counters::kDeliveryP50Us, us(w.latency.Percentile(0.50)));
    set(counters::kDeliveryP99Us, us(w.latency.Percentile(0.99)));
    // Short of the target in records sent or delivered within the window (FellShort, as
    // Produce's open-loop rows): the latencies above are then queueing, and it says so.
    RateProbe carried;
    carried.target_rate = static_cast<double>(params_.rate);
    carried.sent_rate = w.seconds > 0 ? static_cast<double>(w.sent) / w.seconds : 0;
    carried.delivered_rate = w.seconds > 0 ? static_cast<double>(w.records) / w.seconds : 0;
    ReportOpenLoopRate(state, Name(params_).str(), carried);
    set(counters::kWindowSeconds, w.seconds);
    ReportStages(state, w.stats);
    set(counters::kDeliveredRecords, static_cast<double>(TotalCount(delivered_)));
    set(counters::kEndOffsets, static_cast<double>(end_offsets_));
    // Interval samples: records/s delivered, and the end-to-end p99 of records intended in
    // each interval.
    intervals_ = IntervalSeries{};
    const std::vector<LatencyHistogram> per = consumer_->IntervalLatency(window_.end());
    for (std::size_t i = 0; i < w.intervals.size(); ++i) {
      const IntervalSample& iv = w.intervals[i];
      const double secs = iv.seconds > 0 ? iv.seconds : 1;
      intervals_.seconds.push_back(iv.seconds);
      intervals_.records_per_second.push_back(static_cast<double>(iv.records) / secs);
      intervals_.mb_per_second.push_back(static_cast<double>(iv.value_bytes) / secs /
                                         (1024.0 * 1024.0));
      intervals_.p99_us.push_back(i < per.size() && per[i].count() > 0
                                      ? static_cast<double>(per[i].Percentile(0.99))
                                      : std::nan(""));
    }
    set(counters::kIntervalCv, intervals_.RecordsPerSecondCv());
  }
  const IntervalSeries& intervals() const { return intervals_; }

 private:
  EndToEndWork(const EndToEndParams& p, std::unique_ptr<BenchCluster> cluster)
      : params_(p),
        cluster_(std::move(cluster)),
        records_(
            PayloadGenerator(p.payload, p.record_bytes, p.seed).GenerateSendRecords(p.records)),
        window_(OpenLoopWindowSeconds(p.run.window_seconds, static_cast<double>(p.rate))) {}

  // After a round or a stopped run: every record delivered, on the codec asked for, in
  // the topic (end offsets) and received by the consumer, per partition.
  Status Account(const Status& run) {
    ProduceTotals t = driver_->Collect();
    AddCounts(delivered_, t.delivered_per_partition);
    Status e = t.AccountingError();
    if (!run) e = Status::Error(run.message() + (e.ok() ? "" : "; " + e.message()));
    if (e.ok() && !t.codec_fallback.empty() && driver_->requested_codec() != "none") {
      e = Status::Error("requested codec " + driver_->requested_codec() +
                        " was not used on the wire: librdkafka says \"" + t.codec_fallback + "\"");
    }
    if (e.ok()) e = CheckEndOffsets();
    if (e.ok()) e = consumer_->WaitFor(delivered_, kReceiveTimeout);
    return e;
  }

  Status CheckEndOffsets() {
    StatusOr<std::vector<std::int64_t>> ends =
        cluster_->AwaitEndOffsets(delivered_, kEndOffsetWait);
    if (!ends) return ends.status();
    end_offsets_ = TotalCount(*ends);
    PartitionComparison c = ComparePartitionCounts(delivered_, *ends, "delivered", "end offset");
    return c.equal() ? Status::Ok() : EndOffsetError(c, false);
  }

  EndToEndParams params_;
  std::unique_ptr<BenchCluster> cluster_;
  RecordSet records_;
  std::unique_ptr<LatencyConsumer> consumer_;
  std::unique_ptr<ProducerDriver> driver_;
  WindowSchedule window_;
  PartitionCounts delivered_;  // over the benchmark's life
  std::int64_t end_offsets_ = 0;
  IntervalSeries intervals_;
  Status error_;  // a failed run poisons the rest of this benchmark
};

// ------------------------------------------------------------------ registration

// The row's records: distinct over more than its batches hold (harness/payload.h); a row
// that would repeat them is refused when selected, unless --allow-repeats.
void Register(BenchSession& session, EndToEndParams p) {
  std::size_t batch_size = kDefaultBatchSize;
  for (const auto& [key, value] : p.run.client_settings) {
    // Validated by librdkafka when parsed (an integer in its range).
    if (key == "batch.size") batch_size = std::strtoull(value.c_str(), nullptr, 10);
  }
  p.records =
      PlanSendRecords(p.payload, SendShape{batch_size, static_cast<std::size_t>(p.partitions), 1},
                      p.run.allow_repeats, session.run_state().payload_files());
  if (!p.records.refusal.empty())
    session.NoteRefusedRow(Name(p).str() + "/real_time", p.records.refusal);
  p.not_run = MockNotRunReason(p.run, p.codec);
  RegisterWork<EndToEndWork>(session, Name(p), p)->UseRealTime();
  session.NoteRegisteredName(Name(p).str() + "/real_time");
}

void ApplyEndToEndSetting(EndToEndParams& p, std::string_view key, std::string_view value) {
  FindAxis("--end-to-end", EndToEndAxes(), key).parse(p, key, value);
}

void RegisterEndToEndFamily(const Options& options, BenchSession& session) {
  AddContextEntry("end_to_end_clock",
                  "producer and consumer in one process on one host: std::chrono::steady_clock "
                  "(CLOCK_MONOTONIC), no cross-host offset");
  EndToEndParams base;
  base.seed = options.payload_seed;
  base.run = ClusterRunOf(options, session.run_state());
  if (!options.payloads.empty()) base.payload = options.payloads.front();
  std::vector<std::string_view> specs(kDefaultRows.begin(), kDefaultRows.end());
  if (!options.end_to_end_specs.empty())
    specs.assign(options.end_to_end_specs.begin(), options.end_to_end_specs.end());
  for (std::string_view spec : specs) {
    for (const EndToEndParams& p :
         ExpandMatrixSpec("--end-to-end", spec, base, ApplyEndToEndSetting))
      Register(session, p);
  }
}

}  // namespace

constexpr FamilyAbout kEndToEndAbout{
    "latency from a record's intended send time (carried in a header) to a consumer "
    "in the same process reading the same topic, at a fixed rate, linger.ms 0; the "
    "delivery-report latency of the same records beside it; every record received "
    "exactly once; a row per combination of its `--end-to-end` keys",
    "EndToEnd/latency/acks:1/codec:none/record_bytes:100/rate:10000/partitions:2/real_time"};
KBENCH_REGISTER_FAMILY(EndToEnd, RegisterEndToEndFamily, FamilyTarget::kCluster, kEndToEndAbout,
                       EndToEndKeys);

}  // namespace kbench::bench
