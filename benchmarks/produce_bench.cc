// Produce family: the full send path of a real client (librdkafka) to a cluster, for the
// parameters users tune: acks, codec and level, record size and payload, linger.ms,
// batch.size, partitions, replication, max.in.flight, idempotence, application threads
// sharing producer instances (seed 000), warm-up and a target rate.
//
// Timed (real time, UseRealTime): a steady-state window. Production starts before the timed
// loop and runs through --warmup-seconds unmeasured; each iteration is then a window of
// --window-seconds in which the driver's threads produce continuously (the loop's thread
// only waits), so the pipeline stays full and no flush falls inside the window. records/s
// counts records delivered within the window, as kafka-producer-perf-test reports what the
// cluster acknowledged; the drain after the window is not timed. Real time rather than
// manual time because the whole window is the measured work. (--records-per-iteration=N
// selects the older shape instead: N records and a flush per iteration.)
// Not timed: cluster and topic setup, producer creation and connection, payload
// generation, the warm-up records, statistics collection and all checks. The records cycled
// through are distinct over more than the row's batches hold (harness/payload.h:
// PlanSendRecords), so no batch compresses a repeat; a smaller file: payload is refused.
// Verified: every produced record has a delivery report and none failed (else
// SkipWithError naming the undelivered count); the requested codec went on the wire
// (librdkafka silently sends uncompressed when the broker lacks the codec's feature: the
// driver reads each broker's feature set from librdkafka's debug=feature log and fails the
// benchmark when the codec's feature is missing); each partition's end offset grew by
// exactly the records delivered to it (counted per partition from the delivery reports, at
// every acks: acks=0 loses records silently). A shortfall fails the benchmark naming
// lost_records per partition, unless --allow-loss (then it is only reported); extra
// records (duplicates from retries) always fail it.
//
// Latency: from each record's intended send time to its delivery report (harness/producer.h).
// Open-loop rows (rate:N, one schedule from the start of the warm-up to the window's end)
// report it as p50_us ... max_us, avg_us, with target_rate, achieved_rate and rate_shortfall,
// over a window of at least 5,000 records (fixtures/window.h: p99 rests on 50 or more);
// closed-loop rows report the same measurement as queue_p50_us ... queue_avg_us, because
// under a load the client sets itself it is queueing, not latency. Wire bytes, requests, retries,
// batch sizes and ratio come from librdkafka's statistics (statistics.interval.ms,
// harness/rdkafka_stats.h); ratio = bytes of produced batches (after compression, with batch
// overhead) / key+value bytes in them.
//
// Maximum sustainable rate (`Produce/max_rate/...`, one iteration = one search; its time is
// the search's, not judged): a closed-loop window gives the seed, then open-loop windows at
// grid rates (fixtures/rate_search.h), each with its own warm-up on the same producers,
// until the highest rate sustained (fixtures/rate_search.h says what that means; within
// --max-rate-p99-us if given) is bracketed to one grid step and confirmed by two of at most
// three windows. Every
// probe is checked like a window (all records delivered, codec, end offsets at the end);
// a failed check or an unconfirmed maximum fails the row. Then one window each at 25, 50, 75
// and 90 % of the maximum; all probes together are the latency curve (kbench_rate_curves in
// the JSON, drawn by scripts/plot).
//
// Elsewhere: the --produce keys, names and default rows in produce_params.h; the untimed
// set-up and end-offset check in produce_setup.h; the reference row, Produce/bare_producev
// (a plain rd_kafka_producev loop that Produce/send is judged against), in
// produce_reference.h.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "benchmarks/produce_params.h"
#include "benchmarks/produce_reference.h"
#include "benchmarks/produce_setup.h"
#include "fixtures/counters.h"
#include "fixtures/family.h"
#include "fixtures/options.h"
#include "fixtures/pairing.h"
#include "fixtures/producer_counters.h"
#include "fixtures/rate_search.h"
#include "fixtures/runner.h"
#include "fixtures/window.h"
#include "harness/partition_check.h"
#include "harness/producer.h"
#include "harness/status.h"

namespace kbench::bench::produce {
namespace {

// ------------------------------------------------------------------ work

class ProduceWork {
 public:
  static StatusOr<std::unique_ptr<ProduceWork>> Create(const ProduceParams& p) {
    StatusOr<std::unique_ptr<BenchCluster>> cluster = ProduceSetup::CreateCluster(p);
    if (!cluster) return cluster.status();
    std::unique_ptr<ProduceWork> work(new ProduceWork(p, std::move(*cluster)));
    ProducerOptions o;
    o.settings = work->setup_.settings();
    o.topic = work->setup_.cluster().topic();
    o.threads = p.threads;
    o.producers = p.producers;
    o.rate = static_cast<double>(p.rate);
    o.transaction_records = p.transaction_records;
    o.progress_label = Name(p).str();
    auto driver = ProducerDriver::Create(o, work->setup_.records());
    if (!driver) return driver.status();
    work->driver_ = std::move(*driver);
    return work;
  }

  Status Verify() {
    WaitForCommonStart(
        setup_.run());  // set-up is done; several hosts send their first records together
    // The warm-up round doubles as the check: it must be delivered in full.
    std::int64_t warm = std::max<std::int64_t>(setup_.warmup(), 1);
    driver_->BeginMeasurement();
    Status s = driver_->RunRound(warm);
    ProduceTotals t = driver_->Collect();
    Status err = s.ok() ? t.AccountingError()
                        : Status::Error(s.message() + "; " + t.AccountingError().message());
    if (!err) return Status::Error("warm-up: " + err.message());
    if (Status e = CodecError(t); !e) return e;
    delivered_total_ = t.delivered;
    delivered_ = t.delivered_per_partition;
    markers_ = t.markers_per_partition;
    if (Status e = setup_.CheckEndOffsets(delivered_, markers_); !e)
      return Status::Error("warm-up: " + e.message());
    driver_->BeginMeasurement();
    return Status::Ok();
  }

  // Windowed: production starts and runs through warmup_seconds before the window opens,
  // so the window begins with the pipeline (queue, batches, requests in flight) full.
  Status BeginRun() {
    if (!setup_.windowed()) return Status::Ok();
    if (!round_error_.ok()) return round_error_;
    driver_->BeginMeasurement();
    driver_->Start();
    driver_->WaitUntil(
        WindowSchedule::Clock::now() +
        std::chrono::duration_cast<WindowSchedule::Clock::duration>(setup_.warmup_seconds()));
    window_.Reset();
    return Status::Ok();
  }

  void Iterate() {
    if (setup_.windowed()) {
      if (window_.Open()) driver_->OpenWindow(window_.origin(), window_.interval());
      driver_->WaitUntil(window_.Next());
      return;
    }
    if (!round_error_.ok()) return;  // a failed round poisons the rest of this run
    Status s = driver_->RunRound(setup_.records_per_iteration());
    if (!s) round_error_ = s;
  }

  std::int64_t items_per_iteration() const {
    return setup_.windowed() ? 0 : setup_.records_per_iteration();
  }
  std::int64_t bytes_per_iteration() const {
    return setup_.windowed() ? 0 : setup_.AverageValueBytes(setup_.records_per_iteration());
  }

  void Report(benchmark::State& state) {
    std::optional<MeasuredWindow> window;
    if (setup_.windowed()) {
      // The drain: after the window, not timed. Deliveries it serves count in the totals
      // (and the end-offset check), not in the window.
      Status s = driver_->Stop();
      if (!s && round_error_.ok()) round_error_ = s;
      window = driver_->CloseWindow(window_.end());
    }
    ProduceTotals t = driver_->Collect();
    delivered_total_ += t.delivered;
    AddCounts(delivered_, t.delivered_per_partition);
    AddCounts(markers_, t.markers_per_partition);
    Status error = t.AccountingError();
    if (!round_error_.ok()) {
      error = Status::Error(round_error_.message() + (error.ok() ? "" : "; " + error.message()));
    }
    if (error.ok()) error = CodecError(t);
    if (error.ok() && !t.stats_error.empty()) error = Status::Error(t.stats_error);
    if (error.ok()) error = setup_.CheckEndOffsets(delivered_, markers_);
    if (!error.ok()) {
      state.SkipWithError(error.message().c_str());
      return;
    }
    const bool open_loop = setup_.params().rate > 0;
    // What the lens or the loaded release changed of the row's settings, in the result.
    if (std::string note = SettingsNote(setup_.params()); !note.empty()) state.SetLabel(note);
    if (window) {
      state.SetItemsProcessed(window->records);
      state.SetBytesProcessed(window->value_bytes);
      ReportLatency(state, window->latency, open_loop);
      ReportProducerStats(state, window->stats, t.failed + t.rejected, t.retries());
      intervals_ = IntervalsOf(*window);
      // The window's opening on the wall clock: steady clocks are not comparable across hosts.
      const auto opened = std::chrono::system_clock::now() -
                          std::chrono::duration_cast<std::chrono::system_clock::duration>(
                              std::chrono::steady_clock::now() - window_.origin());
      intervals_.start_unix_seconds =
          std::chrono::duration<double>(opened.time_since_epoch()).count();
      state.counters[counters::kIntervalCv] = counters::Value(intervals_.RecordsPerSecondCv());
      state.counters[counters::kWindowSeconds] = counters::Value(window->seconds);
      if (open_loop) {
        RateProbe carried;
        carried.target_rate = static_cast<double>(setup_.params().rate);
        carried.sent_rate = static_cast<double>(window->sent) / window->seconds;
        carried.delivered_rate = static_cast<double>(window->records) / window->seconds;
        ReportOpenLoopRate(state, Name(setup_.params()).str(), carried);
      }
    } else {
      // Exact value bytes, not the per-iteration estimate used for the declaration.
      state.SetBytesProcessed(t.value_bytes);
      ReportLatency(state, t.latency, open_loop);
      ReportProducerStats(state, t.stats, t.failed + t.rejected, t.retries());
    }
    state.counters[counters::kQueueFull] = counters::Value(static_cast<double>(t.queue_full));
    if (const std::int64_t n = setup_.params().transaction_records; n > 0) {
      using counters::Value;
      if (window && window->seconds > 0) {
        state.counters[counters::kTransactionsPerSecond] =
            Value(static_cast<double>(window->records) / window->seconds / static_cast<double>(n));
      }
      state.counters[counters::kCommitAvgUs] =
          Value(t.transactions > 0
                    ? static_cast<double>(t.commit_ns) / 1e3 / static_cast<double>(t.transactions)
                    : 0.0);
      state.counters[counters::kTransactionsAborted] =
          Value(static_cast<double>(t.transactions_aborted));
      state.counters[counters::kTransactionMarkers] =
          Value(static_cast<double>(TotalCount(markers_)));
      state.counters[counters::kInitTransactionsMs] =
          Value(static_cast<double>(driver_->init_transactions_ns()) / 1e6);
    }
    // Totals over the benchmark's life (warm-up included), so scripts can check the topic.
    setup_.ReportEndOffsets(state, delivered_total_);
  }

  const IntervalSeries& intervals() const { return intervals_; }
  std::int64_t inflight_records() const { return setup_.windowed() ? driver_->InFlight() : -1; }

  // One window at `rate` (0: unthrottled) outside Google Benchmark's loop, for the
  // maximum-rate search: warm-up at the same rate, window, drain. Every record of it is
  // accounted for (delivered, right codec) before its figures count.
  StatusOr<RateProbe> Probe(double rate) {
    if (Status s = driver_->SetRate(rate); !s) return s;
    WindowSchedule window(setup_.run().window_seconds);
    driver_->BeginMeasurement();
    driver_->Start();
    driver_->WaitUntil(
        WindowSchedule::Clock::now() +
        std::chrono::duration_cast<WindowSchedule::Clock::duration>(setup_.warmup_seconds()));
    window.Open();
    driver_->OpenWindow(window.origin(), window.interval());
    driver_->WaitUntil(window.Next());
    Status stopped = driver_->Stop();
    MeasuredWindow w = driver_->CloseWindow(window.end());
    ProduceTotals t = driver_->Collect();
    delivered_total_ += t.delivered;
    AddCounts(delivered_, t.delivered_per_partition);
    Status error = t.AccountingError();
    if (!stopped) {
      error = Status::Error(stopped.message() + (error.ok() ? "" : "; " + error.message()));
    }
    if (error.ok()) error = CodecError(t);
    if (!error.ok()) return error;
    const double secs = w.seconds > 0 ? w.seconds : 1;
    RateProbe out;
    out.sent_rate = static_cast<double>(w.sent) / secs;
    out.delivered_rate = static_cast<double>(w.records) / secs;
    // Far above capacity no record intended in the window is delivered in it: no latency
    // was measured (not a latency of 0).
    auto percentile = [&](double q) {
      return w.latency.count() > 0 ? static_cast<double>(w.latency.Percentile(q))
                                   : std::numeric_limits<double>::quiet_NaN();
    };
    out.p50_us = percentile(0.50);
    out.p99_us = percentile(0.99);
    out.p999_us = percentile(0.999);
    return out;
  }
  // After probes: the end offsets against everything delivered, and their counters.
  Status CheckEndOffsets() { return setup_.CheckEndOffsets(delivered_); }
  void ReportEndOffsets(benchmark::State& state) const {
    setup_.ReportEndOffsets(state, delivered_total_);
  }
  double AverageValueBytes() const {
    return static_cast<double>(setup_.AverageValueBytes(1000000)) / 1e6;
  }
  double max_rate_p99_us() const { return setup_.run().max_rate_p99_us; }

 private:
  ProduceWork(const ProduceParams& p, std::unique_ptr<BenchCluster> cluster)
      : setup_(p, std::move(cluster)),
        window_(OpenLoopWindowSeconds(p.run.window_seconds, static_cast<double>(p.rate))) {}

  Status CodecError(const ProduceTotals& t) const {
    if (t.codec_fallback.empty() || driver_->requested_codec() == "none") return Status::Ok();
    return Status::Error("requested codec " + driver_->requested_codec() +
                         " was not used on the wire: librdkafka says \"" + t.codec_fallback + "\"");
  }

  ProduceSetup setup_;
  std::unique_ptr<ProducerDriver> driver_;
  WindowSchedule window_;
  IntervalSeries intervals_;
  Status round_error_;
  std::int64_t delivered_total_ = 0;
  PartitionCounts delivered_;  // per partition, over the benchmark's life
  PartitionCounts markers_;    // transactions' control records per partition, likewise
};

// The maximum sustainable rate of a send row's shape (fixtures/rate_search.h): the search
// is the measured work, on one set of producers and one topic (warm after Verify).
class MaxRateWork {
 public:
  static StatusOr<std::unique_ptr<MaxRateWork>> Create(const ProduceParams& p) {
    StatusOr<std::unique_ptr<ProduceWork>> produce = ProduceWork::Create(p);
    if (!produce) return produce.status();
    return std::unique_ptr<MaxRateWork>(new MaxRateWork(std::move(*produce)));
  }

  Status Verify() { return produce_->Verify(); }

  void Iterate() {
    if (!error_.ok()) return;
    StatusOr<RateProbe> seed = produce_->Probe(0);
    if (!seed) {
      error_ = Status::Error("closed-loop window: " + seed.message());
      return;
    }
    closed_loop_rate_ = seed->delivered_rate;
    RateSearchOptions options;
    options.slo_p99_us = produce_->max_rate_p99_us();
    result_ = FindMaxRate(closed_loop_rate_, options,
                          [this](double rate) { return produce_->Probe(rate); });
    error_ = result_.status;
  }

  std::int64_t items_per_iteration() const { return 0; }
  std::int64_t bytes_per_iteration() const { return 0; }

  void Report(benchmark::State& state) {
    Status error = error_;
    if (error.ok()) error = produce_->CheckEndOffsets();
    if (!error.ok()) {
      state.SkipWithError(error.message().c_str());
      return;
    }
    const RateProbe& best = result_.probes[result_.best];
    state.counters[counters::kMaxRate] = counters::Value(result_.max_rate);
    state.counters[counters::kMaxRateMbPerSecond] =
        counters::Value(result_.max_rate * produce_->AverageValueBytes() / (1024.0 * 1024.0));
    state.counters[counters::kClosedLoopRate] = counters::Value(closed_loop_rate_);
    state.counters[counters::kRateProbes] =
        counters::Value(static_cast<double>(result_.probes.size()));
    state.counters[counters::kMaxRateStepPct] = counters::Value(GridStepPct(result_.max_rate));
    state.counters[counters::kMaxRateP50Us] = counters::Value(best.p50_us);
    state.counters[counters::kMaxRateP99Us] = counters::Value(best.p99_us);
    state.counters[counters::kMaxRateP999Us] = counters::Value(best.p999_us);
    produce_->ReportEndOffsets(state);
  }

  const std::vector<RateProbe>& rate_curve() const { return result_.probes; }

 private:
  explicit MaxRateWork(std::unique_ptr<ProduceWork> produce) : produce_(std::move(produce)) {}

  std::unique_ptr<ProduceWork> produce_;
  RateSearchResult result_;
  double closed_loop_rate_ = 0;
  Status error_;
};

// ------------------------------------------------------------------ registration

// The row's records (harness/payload.h): enough distinct value bytes for what its producers'
// batches hold. A row that would repeat records is refused before anything runs (exit 2)
// when the filter selects it, unless --allow-repeats.
void PlanRecords(BenchSession& session, ProduceParams& p) {
  p.records = PlanSendRecords(
      p.payload,
      SendShape{static_cast<std::size_t>(p.batch_bytes), static_cast<std::size_t>(p.partitions),
                static_cast<std::size_t>(p.producers)},
      p.run.allow_repeats, session.run_state().payload_files());
  if (!p.records.refusal.empty())
    session.NoteRefusedRow(Name(p).str() + "/real_time", p.records.refusal);
}

// With `find_max_rate`, a closed-loop send row also gets its max_rate twin, right after it.
void Register(BenchSession& session, ProduceParams p, bool find_max_rate) {
  PlanRecords(session, p);
  if (find_max_rate && p.variant == "send" && p.rate == 0) {
    Register(session, p, false);
    ProduceParams twin = p;
    twin.variant = "max_rate";
    Register(session, twin, false);
    return;
  }
  if (p.variant == "bare_producev") {
    RegisterWork<BareProducevWork>(session, Name(p), p)->UseRealTime();
  } else if (p.variant == "max_rate") {
    // A search takes many windows, so Google Benchmark's first trial (one iteration)
    // already exceeds any usual --benchmark_min_time: one search per repetition.
    RegisterWork<MaxRateWork>(session, Name(p), p)->UseRealTime();
  } else {
    RegisterWork<ProduceWork>(session, Name(p), p)->UseRealTime();
  }
  // Google Benchmark reports (and filters) the name with this suffix: note it too, so a
  // filter anchored on the full name still resolves the target.
  session.NoteRegisteredName(Name(p).str() + "/real_time");
}

// bare_producev: librdkafka's produce loop without kbench's driver.
constexpr FamilyReference kProduceReferences[] = {
    {"bare_producev", "send", "send / bare_producev"}};

// Registers rows in order, except that each bare_producev row runs right next to the send
// row with the same parameters (fixtures/pairing.h).
void RegisterPaired(BenchSession& session, const std::vector<ProduceParams>& rows,
                    bool references_last, bool find_max_rate) {
  const FamilyReference& reference = kProduceReferences[0];
  std::vector<PairableRow> pairable;
  for (ProduceParams p : rows) {
    const std::string_view variant = p.variant;
    p.variant = reference.of;
    pairable.push_back({variant, Name(p).str()});
  }
  for (std::size_t i : PairedOrder(pairable, reference, references_last)) {
    Register(session, rows[i], find_max_rate);
  }
}

void RegisterProduceFamily(const Options& options, BenchSession& session) {
  std::vector<CodecSpec> codecs;
  for (const auto& c : options.codecs) {
    if (Status why = LibrdkafkaCanWrite(c); !why) {
      std::fprintf(stderr, "kbench: note: Produce skips codec %s level %d: %s\n", c.Name().c_str(),
                   c.level, why.message().c_str());
      continue;
    }
    codecs.push_back(c);
  }
  ProduceParams base;
  base.seed = options.payload_seed;
  base.run = ClusterRunOf(options, session.run_state());
  if (!options.payloads.empty()) base.payload = options.payloads.front();
  if (!options.record_sizes.empty()) base.record_bytes = options.record_sizes.front();

  // Explicit rows replace the default matrix (scenarios and side-by-side runs use this).
  if (!options.produce_specs.empty()) {
    for (const auto& spec : options.produce_specs) {
      RegisterPaired(session, ExpandProduceSpec(spec, base), options.references_last,
                     options.find_max_rate);
    }
    return;
  }

  std::set<std::string> registered;
  bool codecs_done = false;
  for (const DefaultRows& group : ProduceDefaultRows()) {
    if (group.unless_find_max_rate && options.find_max_rate) continue;
    std::vector<ProduceParams> rows = ExpandProduceSpec(group.spec, base);
    if (group.codec_group && !options.codecs.empty()) {
      // --codec replaces the group: one acks=all row per codec, at the group's size.
      if (codecs_done) continue;
      codecs_done = true;
      ProduceParams shape = rows.front();
      shape.acks = ProduceParams{}.acks;
      rows.clear();
      for (const CodecSpec& codec : codecs) {
        rows.push_back(shape);
        rows.back().codec = codec;
      }
    }
    std::vector<ProduceParams> fresh;
    for (ProduceParams& p : rows) {
      if (!options.record_sizes.empty()) p.record_bytes = base.record_bytes;
      if (!options.payloads.empty() && !group.keep_payload) p.payload = base.payload;
      if (registered.insert(Name(p).str()).second) fresh.push_back(p);
    }
    RegisterPaired(session, fresh, options.references_last,
                   options.find_max_rate && !group.unless_find_max_rate);
  }
}

}  // namespace

constexpr FamilyAbout kProduceAbout{
    "librdkafka's full send path to a cluster, a row per combination of the `--produce` "
    "keys (acks, codec, record size, partitions, threads × producer instances, target rate, "
    "...); a `bare_producev` reference row (a plain "
    "`rd_kafka_producev` loop, same settings)",
    "Produce/send/acks:all/codec:lz4/record_bytes:500/threads:1/producers:1/real_time"};
KBENCH_REGISTER_FAMILY(Produce, RegisterProduceFamily, FamilyTarget::kCluster, kProduceAbout,
                       ProduceKeys, kProduceReferences);

}  // namespace kbench::bench::produce
