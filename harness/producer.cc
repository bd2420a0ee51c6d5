#include "harness/producer.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

#include <unistd.h>

#include "harness/codec.h"
#include "harness/librdkafka_api.h"

namespace kbench {

using Clock = std::chrono::steady_clock;

namespace {

std::uint64_t NowNs() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

// Single-writer counter: only the owning thread writes, others read for progress lines,
// so a relaxed load+store (no locked instruction) is enough.
void Bump(std::atomic<std::int64_t>& a, std::int64_t n = 1) {
  a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

const std::string* LastSetting(const ClientSettings& settings,
                               std::initializer_list<const char*> keys) {
  const std::string* found = nullptr;
  for (const auto& [k, v] : settings) {
    for (const char* key : keys) {
      if (k == key) found = &v;
    }
  }
  return found;
}

}  // namespace

struct alignas(64) DriverThreadState {
  LatencyHistogram latency;
  std::atomic<std::int64_t> produced{0}, delivered{0}, failed{0}, rejected{0}, queue_full{0},
      value_bytes{0}, delivered_bytes{0};
  // Progress window: latency sum/count/max since the last progress line.
  std::atomic<std::int64_t> window_sum_us{0}, window_count{0}, window_max_us{0};
  std::map<int, std::int64_t> errors;  // rd_kafka_resp_err_t -> count; owner thread only
  // Delivered records (and their digests) per partition; owner thread only, read after
  // the round has ended.
  PartitionCounts delivered_per_partition;
  std::vector<std::uint64_t> digest_per_partition;
  bool digest = false;         // ProducerOptions::digest_records
  bool transactional = false;  // ProducerOptions::transaction_records > 0
  // Measured window: its origin (0 = none) and interval width, set by the main thread
  // while the workers run (OpenWindow), read by this thread's delivery callbacks.
  std::atomic<std::uint64_t> window_origin_ns{0}, window_interval_ns{1};
  // Owner thread only while producing; read by the main thread after Stop().
  std::vector<IntervalSample> intervals;
  // Transactions (owner thread only): partitions the open transaction has delivered to
  // (flags, set by the delivery reports this thread serves: commit_transaction flushes
  // through this thread), control records written per partition, counts, first error.
  std::vector<char> txn_touched;
  PartitionCounts markers_per_partition;
  std::int64_t transactions = 0, transactions_aborted = 0, commit_ns = 0;
  std::string transaction_error;
  // When the owner's current rd_kafka_poll(rk, 0) began (0 outside one): the delivery
  // time of the reports it serves, read once per poll instead of once per report.
  std::uint64_t poll_now_ns = 0;

  // The interval a time at or after the window origin falls into; nullptr far beyond.
  IntervalSample* Interval(std::uint64_t origin, std::uint64_t at) {
    constexpr std::uint64_t kMaxIntervals = 100000;  // bounds memory on runaway windows
    const std::uint64_t offset = at - origin;
    // Times arrive nearly in order: most fall into the interval of the previous one.
    if (offset - cached_begin < cached_width && cached_origin == origin) return cached;
    const std::uint64_t width = window_interval_ns.load(std::memory_order_relaxed);
    const std::uint64_t i = offset / width;
    if (i >= kMaxIntervals) return nullptr;
    if (i >= intervals.size()) {
      intervals.resize(i + 1);  // about once per interval
      cached_width = 0;         // the resize moved the samples
    }
    if (i + 1 == intervals.size()) {  // cache the newest interval only (older are rare)
      cached = &intervals[i];
      cached_origin = origin;
      cached_begin = i * width;
      cached_width = width;
    }
    return &intervals[i];
  }
  IntervalSample* cached = nullptr;
  std::uint64_t cached_origin = 0, cached_begin = 0, cached_width = 0;

  void Reset() {
    latency.Reset();
    for (auto* a : {&produced, &delivered, &failed, &rejected, &queue_full, &value_bytes,
                    &delivered_bytes, &window_sum_us, &window_count, &window_max_us}) {
      a->store(0, std::memory_order_relaxed);
    }
    errors.clear();
    delivered_per_partition.clear();
    digest_per_partition.clear();
    // txn_touched stays: a transaction open across a measurement boundary keeps its
    // partitions (its marker is written when it commits, and counted then).
    markers_per_partition.clear();
    transactions = transactions_aborted = commit_ns = 0;
    transaction_error.clear();
  }
};

struct ProducerInstance {
  RdKafkaPtr rk;
  rd_kafka_topic_t* rkt = nullptr;
  StatsAccumulator stats;
  std::mutex log_mu;
  std::string codec_fallback;
  // Features librdkafka enabled per broker ("Enabling feature X", debug=feature): its own
  // view of what each broker supports, which decides whether a batch is compressed.
  std::map<std::string, std::string> broker_features;
  int errors_logged = 0;

  ~ProducerInstance() {
    if (rkt) rd_kafka_topic_destroy(rkt);
  }
};

namespace {

// The thread serving delivery reports (whoever calls rd_kafka_poll/flush) records into
// its own state: no sharing, no locks on the delivery path.
thread_local DriverThreadState* tls_state = nullptr;

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  DriverThreadState* s = tls_state;
  if (!s) return;  // only during destruction, when nobody is measuring
  if (m->err) {
    Bump(s->failed);
    ++s->errors[m->err];
    return;
  }
  auto intended = reinterpret_cast<std::uintptr_t>(m->_private);
  const std::uint64_t now = s->poll_now_ns ? s->poll_now_ns : NowNs();
  std::uint64_t us = now > intended ? (now - intended) / 1000 : 0;
  Bump(s->delivered);
  Bump(s->delivered_bytes, static_cast<std::int64_t>(m->len));
  if (m->partition >= 0) {
    const auto p = static_cast<std::size_t>(m->partition);
    if (p >= s->delivered_per_partition.size()) s->delivered_per_partition.resize(p + 1, 0);
    ++s->delivered_per_partition[p];
    if (s->transactional) {
      if (p >= s->txn_touched.size()) s->txn_touched.resize(p + 1, 0);
      s->txn_touched[p] = 1;
    }
    if (s->digest) {
      if (p >= s->digest_per_partition.size()) s->digest_per_partition.resize(p + 1, 0);
      s->digest_per_partition[p] +=
          RecordDigest(m->offset, std::string_view(static_cast<const char*>(m->key), m->key_len),
                       std::string_view(static_cast<const char*>(m->payload), m->len));
    }
  }
  // Inside a measured window: counts by delivery time, latency by intended send time (the
  // window's histograms replace the running one, which only rounds report).
  if (const std::uint64_t origin = s->window_origin_ns.load(std::memory_order_acquire)) {
    if (now >= origin) {
      if (IntervalSample* at = s->Interval(origin, now)) {
        ++at->records;
        at->value_bytes += static_cast<std::int64_t>(m->len);
      }
    }
    if (intended >= origin) {
      if (IntervalSample* at = s->Interval(origin, intended)) at->latency.Record(us);
    }
  } else {
    s->latency.Record(us);
  }
  Bump(s->window_sum_us, static_cast<std::int64_t>(us));
  Bump(s->window_count);
  if (static_cast<std::int64_t>(us) > s->window_max_us.load(std::memory_order_relaxed)) {
    s->window_max_us.store(static_cast<std::int64_t>(us), std::memory_order_relaxed);
  }
}

int OnStats(rd_kafka_t*, char* json, std::size_t len, void* opaque) {
  static_cast<ProducerInstance*>(opaque)->stats.AddEmit(std::string_view(json, len));
  return 0;  // librdkafka frees the JSON
}

void OnLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  auto* inst = static_cast<ProducerInstance*>(rd_kafka_opaque(rk));
  if (!inst) return;
  std::lock_guard<std::mutex> lock(inst->log_mu);
  // librdkafka's only trace of a codec the broker cannot take (msgset writer, NOTICE).
  if (std::strcmp(fac, "COMPRESSION") == 0 && inst->codec_fallback.empty()) {
    inst->codec_fallback = buf;
  }
  if (std::strcmp(fac, "APIVERSION") == 0) {
    // "<broker>: Enabling feature ZSTD", once per feature after each ApiVersions answer.
    std::string_view text = buf;
    constexpr std::string_view kEnabling = ": Enabling feature ";
    if (auto at = text.find(kEnabling); at != std::string_view::npos) {
      std::string_view broker = text.substr(0, at);
      if (auto sp = broker.rfind(' '); sp != std::string_view::npos) broker.remove_prefix(sp + 1);
      std::string& list = inst->broker_features[std::string(broker)];
      list.append(text.substr(at + kEnabling.size())).append(",");
    }
  }
  if (level <= 3 && inst->errors_logged < 10) {
    ++inst->errors_logged;
    std::fprintf(stderr, "kbench: librdkafka %s: %s\n", fac, buf);
  }
}

}  // namespace

Status ProduceTotals::AccountingError() const {
  std::string error_list;
  for (const auto& [name, count] : errors) {
    error_list += (error_list.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  }
  std::string msg;
  if (delivered + failed != produced) {
    msg = std::to_string(produced - delivered - failed) + " of " + std::to_string(produced) +
          " records have no delivery report";
  } else if (failed > 0) {
    msg =
        std::to_string(undelivered()) + " of " + std::to_string(produced) + " records undelivered";
  }
  if (rejected > 0) {
    msg += (msg.empty() ? "" : "; ") + std::to_string(rejected) +
           " records rejected by rd_kafka_producev";
  }
  if (!msg.empty() && !error_list.empty()) msg += " (" + error_list + ")";
  if (!transaction_error.empty()) msg += (msg.empty() ? "" : "; ") + transaction_error;
  return msg.empty() ? Status::Ok() : Status::Error(msg);
}

StatusOr<std::unique_ptr<ProducerDriver>> ProducerDriver::Create(const ProducerOptions& options,
                                                                 const RecordSet& records) {
  if (options.threads < 1 || options.producers < 1 || options.producers > options.threads) {
    return Status::Error("need 1 <= producers <= threads (got threads " +
                         std::to_string(options.threads) + ", producers " +
                         std::to_string(options.producers) + ")");
  }
  if (records.size() == 0) {
    return Status::Error("no records to produce");
  }
  if (options.transaction_records > 0 && options.producers != options.threads) {
    return Status::Error(
        "transactions need a producer per thread (a transaction belongs to one producer, "
        "and threads sharing it would commit each other's records)");
  }
  std::unique_ptr<ProducerDriver> d(new ProducerDriver());
  d->options_ = options;
  d->records_ = &records;
  if (const auto* codec =
          LastSetting(options.settings, {"compression.codec", "compression.type"})) {
    d->requested_codec_ = *codec;
  }
  try {
    if (const auto* v =
            LastSetting(options.settings, {"message.timeout.ms", "delivery.timeout.ms"})) {
      d->message_timeout_ = std::chrono::milliseconds(std::stoll(*v));
    }
    if (const auto* v = LastSetting(options.settings, {"statistics.interval.ms"})) {
      d->stats_interval_ = std::chrono::milliseconds(std::stoll(*v));
    }
  } catch (const std::exception&) {
    return Status::Error("message.timeout.ms / statistics.interval.ms must be integers");
  }
  if (d->stats_interval_.count() <= 0) {
    return Status::Error(
        "statistics.interval.ms must be > 0: kbench reads wire bytes, requests, retries "
        "and batch sizes from librdkafka's statistics");
  }
  // message.timeout.ms = 0 means infinite: cap the flush wait anyway.
  if (d->message_timeout_.count() == 0) d->message_timeout_ = std::chrono::minutes(5);
  // A transaction call need not outwait its records by much: once they have timed out,
  // the commit fails anyway, and an abort to a dead coordinator would wait it out.
  d->options_.transaction_timeout = std::min<std::chrono::milliseconds>(
      options.transaction_timeout, d->message_timeout_ + std::chrono::seconds(5));

  // debug=feature (logged once per connection, no cost per record) reports what each
  // broker supports; it is added to whatever debug contexts the user asked for.
  ClientSettings settings = options.settings;
  const std::string* debug = LastSetting(settings, {"debug"});
  std::string debug_value;
  if (debug && !debug->empty()) debug_value.append(*debug).append(",");
  debug_value.append("feature");
  settings.emplace_back("debug", debug_value);

  for (int i = 0; i < options.producers; ++i) {
    auto inst = std::make_unique<ProducerInstance>();
    ClientSettings own = settings;
    if (options.transaction_records > 0) {
      // Unique per producer and per process: a transactional.id shared with a live producer
      // fences one of them.
      own.emplace_back("transactional.id", "kbench-" + std::to_string(getpid()) + "-" +
                                               std::to_string(NowNs()) + "-" + std::to_string(i));
    }
    StatusOr<rd_kafka_conf_t*> built = BuildConf(own);
    if (!built) return built.status();
    rd_kafka_conf_t* conf = *built;
    rd_kafka_conf_set_opaque(conf, inst.get());
    rd_kafka_conf_set_dr_msg_cb(conf, &OnDelivery);
    rd_kafka_conf_set_stats_cb(conf, &OnStats);
    rd_kafka_conf_set_log_cb(conf, &OnLog);
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
      rd_kafka_conf_destroy(conf);
      return Status::Error(std::string("cannot create producer: ") + err);
    }
    inst->rk.reset(rk);
    inst->rkt = rd_kafka_topic_new(rk, options.topic.c_str(), nullptr);
    if (!inst->rkt) {
      return Status::Error("cannot create topic handle for '" + options.topic +
                           "': " + rd_kafka_err2str(rd_kafka_last_error()));
    }
    if (options.transaction_records > 0) {
      const auto init_start = NowNs();
      rd_kafka_error_t* error = Optional().init_transactions(
          rk, static_cast<int>(d->options_.transaction_timeout.count()));
      if (error) {
        std::string what = Optional().error_string(error);
        Optional().error_destroy(error);
        return Status::Error("init_transactions: " + what);
      }
      d->init_transactions_ns_ += static_cast<std::int64_t>(NowNs() - init_start);
    }
    d->instances_.push_back(std::move(inst));
  }
  for (int t = 0; t <= options.threads; ++t) {
    d->states_.push_back(std::make_unique<DriverThreadState>());
    d->states_.back()->digest = options.digest_records;
    d->states_.back()->transactional = options.transaction_records > 0;
  }
  for (int t = 0; t < options.threads; ++t)
    d->workers_.emplace_back(&ProducerDriver::WorkerLoop, d.get(), t);
  return d;
}

ProducerDriver::~ProducerDriver() {
  stop_producing_.store(true, std::memory_order_relaxed);  // ends a continuous run
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
  // Destroying a producer with records still queued would block on them: purge first.
  for (auto& inst : instances_) {
    if (rd_kafka_outq_len(inst->rk.get()) > 0) {
      rd_kafka_purge(inst->rk.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      rd_kafka_flush(inst->rk.get(), 2000);
    }
  }
  instances_.clear();
}

void ProducerDriver::WorkerLoop(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    std::int64_t count;
    std::chrono::steady_clock::time_point start;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      count = round_count_;
      start = round_start_;
    }
    ProduceShare(index, count, start);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++done_;
    }
    cv_.notify_all();
  }
}

void ProducerDriver::ProduceShare(int index, std::int64_t count, Clock::time_point start) {
  DriverThreadState& s = *states_[static_cast<std::size_t>(index)];
  tls_state = &s;
  ProducerInstance& inst = *instances_[static_cast<std::size_t>(index % options_.producers)];
  rd_kafka_t* rk = inst.rk.get();
  const auto threads = static_cast<std::int64_t>(options_.threads);
  const bool continuous = count < 0;
  const std::int64_t mine = continuous ? std::numeric_limits<std::int64_t>::max()
                                       : count / threads + (index < count % threads ? 1 : 0);
  const std::uint64_t set_size = records_->size();
  const std::uint64_t start_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count());
  const double ns_per_record = options_.rate > 0 ? 1e9 / options_.rate : 0;
  const bool stamp = options_.stamp_send_time;
  std::uint64_t base;
  {
    std::lock_guard<std::mutex> lock(mu_);
    base = round_base_;
  }

  const std::int64_t txn_records = options_.transaction_records;
  const int txn_timeout_ms = static_cast<int>(options_.transaction_timeout.count());
  std::int64_t in_txn = 0;  // records sent in the open transaction
  bool txn_open = false;
  bool txn_failed = false;  // after a failed transaction call this share stops producing

  std::uint64_t clock_ns = NowNs();
  for (std::int64_t k = 0; k < mine; ++k) {
    if (continuous && stop_producing_.load(std::memory_order_relaxed)) break;
    if (txn_records > 0 && !txn_open) {
      if (txn_failed) break;
      if (!BeginTransaction(rk, s)) break;  // noted in s.transaction_error
      txn_open = true;
    }
    const auto g = static_cast<std::uint64_t>(k * threads + index);
    const std::size_t r = static_cast<std::size_t>((base + g) % set_size);
    std::string_view value = records_->value(r);
    std::string_view key = records_->key_at(base + g);
    std::uint64_t intended;
    if (ns_per_record > 0) {
      intended = start_ns + static_cast<std::uint64_t>(static_cast<double>(g) * ns_per_record);
      std::uint64_t now = NowNs();
      if (now < intended) {
        // Slack before the record is due: serve delivery reports now, so that they are
        // stamped when they arrived rather than at the next 64th record (6.4 ms later at
        // 10,000 records/s: more than the latency being measured).
        s.poll_now_ns = now;
        rd_kafka_poll(rk, 0);
        s.poll_now_ns = 0;
        now = NowNs();
        // A millisecond or more to wait: wait inside rd_kafka_poll, which returns as soon
        // as a report arrives (each stamped by its own clock read: poll_now_ns is 0), so
        // at low rates a report does not wait for the thread's next record either.
        while (intended >= now + 1000000) {
          rd_kafka_poll(rk, static_cast<int>((intended - now) / 1000000));
          now = NowNs();
        }
        if (now < intended) std::this_thread::sleep_for(std::chrono::nanoseconds(intended - now));
      }
    } else {
      // Unthrottled: the clock as of the last poll (at most 64 records ago), not a clock
      // read per record, which alone cost a few % of the send path's throughput.
      intended = clock_ns;
    }
    for (;;) {
      // The intended send time rides in the opaque: no allocation per record.
      // NOLINTNEXTLINE(performance-no-int-to-ptr)
      void* const opaque = reinterpret_cast<void*>(static_cast<std::uintptr_t>(intended));
      // The send-time header (a copied 8-byte value) only when asked for: it costs an
      // allocation per record.
      rd_kafka_resp_err_t err =
          stamp ? rd_kafka_producev(rk, RD_KAFKA_V_RKT(inst.rkt),
                                    RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                                    RD_KAFKA_V_KEY(key.empty() ? nullptr : key.data(), key.size()),
                                    RD_KAFKA_V_HEADER(kSendTimeHeader, &intended, sizeof intended),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                    RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END)
                : rd_kafka_producev(rk, RD_KAFKA_V_RKT(inst.rkt),
                                    RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                                    RD_KAFKA_V_KEY(key.empty() ? nullptr : key.data(), key.size()),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                    RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        Bump(s.produced);
        Bump(s.value_bytes, static_cast<std::int64_t>(value.size()));
        if (const std::uint64_t origin = s.window_origin_ns.load(std::memory_order_acquire);
            origin != 0 && intended >= origin) {
          if (IntervalSample* at = s.Interval(origin, intended)) ++at->sent;
        }
        if (txn_records > 0 && ++in_txn == txn_records) {
          txn_failed = !EndTransaction(rk, s, txn_timeout_ms);
          txn_open = false;
          in_txn = 0;
          clock_ns = NowNs();
        }
        break;
      }
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        // Backpressure: serve delivery reports to make room, then retry the same record
        // (its intended time stays, so the wait shows up in its latency).
        Bump(s.queue_full);
        rd_kafka_poll(rk, 1);
        clock_ns = NowNs();
        continue;
      }
      Bump(s.rejected);
      ++s.errors[err];
      break;
    }
    if ((k & 63) == 63) {
      // Delivery reports served by this poll are stamped with the time it began.
      clock_ns = NowNs();
      s.poll_now_ns = clock_ns;
      rd_kafka_poll(rk, 0);
      s.poll_now_ns = 0;
    }
  }
  if (txn_open) (void)EndTransaction(rk, s, txn_timeout_ms);
  rd_kafka_poll(rk, 0);
  tls_state = nullptr;
}

namespace {

// Counts the open transaction's control records (one per partition it delivered to).
void CountMarkers(DriverThreadState& s) {
  if (s.markers_per_partition.size() < s.txn_touched.size())
    s.markers_per_partition.resize(s.txn_touched.size(), 0);
  for (std::size_t p = 0; p < s.txn_touched.size(); ++p) {
    if (s.txn_touched[p]) ++s.markers_per_partition[p];
    s.txn_touched[p] = 0;
  }
}

// Notes the first transaction error and frees it; returns its text.
std::string TakeTransactionError(DriverThreadState& s, const char* call, rd_kafka_error_t* e) {
  std::string text = std::string(call) + ": " + Optional().error_string(e);
  Optional().error_destroy(e);
  if (s.transaction_error.empty()) s.transaction_error = text;
  return text;
}

}  // namespace

Status ProducerDriver::BeginTransaction(rd_kafka_t* rk, DriverThreadState& s) {
  if (rd_kafka_error_t* e = Optional().begin_transaction(rk)) {
    return Status::Error(TakeTransactionError(s, "begin_transaction", e));
  }
  return Status::Ok();
}

Status ProducerDriver::EndTransaction(rd_kafka_t* rk, DriverThreadState& s, int timeout_ms) {
  const auto start = NowNs();
  rd_kafka_error_t* e = Optional().commit_transaction(rk, timeout_ms);
  s.commit_ns += static_cast<std::int64_t>(NowNs() - start);
  // The commit flushed: every delivery report of the transaction has been served here.
  if (!e) {
    CountMarkers(s);
    ++s.transactions;
    return Status::Ok();
  }
  const bool abortable = Optional().error_txn_requires_abort(e);
  std::string what = TakeTransactionError(s, "commit_transaction", e);
  if (abortable) {
    rd_kafka_error_t* aborted = Optional().abort_transaction(rk, timeout_ms);
    if (!aborted) {
      CountMarkers(s);  // an abort writes its markers too
      ++s.transactions_aborted;
    } else {
      (void)TakeTransactionError(s, "abort_transaction", aborted);
    }
  }
  return Status::Error(what);
}

std::int64_t ProducerDriver::InFlight() const {
  std::int64_t n = 0;
  for (const auto& st : states_) {
    n += st->produced.load(std::memory_order_relaxed) -
         st->delivered.load(std::memory_order_relaxed) - st->failed.load(std::memory_order_relaxed);
  }
  return n;
}

std::int64_t ProducerDriver::Failures() const {
  std::int64_t n = 0;
  for (const auto& st : states_) n += st->failed.load() + st->rejected.load();
  return n;
}

void ProducerDriver::Dispatch(std::int64_t count) {
  round_count_ = count;
  round_start_ = Clock::now();
  done_ = 0;
  ++generation_;
  cv_.notify_all();
}

void ProducerDriver::WaitForWorkers(std::unique_lock<std::mutex>& lock) {
  while (done_ < options_.threads) {
    if (options_.progress_interval.count() > 0) {
      cv_.wait_until(lock, last_progress_ + options_.progress_interval);
      if (Clock::now() >= last_progress_ + options_.progress_interval) PrintProgress(false);
    } else {
      cv_.wait(lock);
    }
  }
}

Status ProducerDriver::RunRound(std::int64_t count) {
  const std::int64_t failed_before = Failures();
  {
    std::unique_lock<std::mutex> lock(mu_);
    Dispatch(count);
    WaitForWorkers(lock);
    round_base_ += static_cast<std::uint64_t>(count);
  }
  Status flushed = FlushAll();
  if (!flushed) return flushed;
  // A round in which records failed is a failed round: callers stop rather than keep
  // feeding a broken cluster (each further round would wait out message.timeout.ms).
  if (std::int64_t failed = Failures() - failed_before; failed > 0) {
    return Status::Error(std::to_string(failed) + " records of a round of " +
                         std::to_string(count) + " failed");
  }
  return flushed;
}

Status ProducerDriver::SetRate(double rate) {
  if (running_) return Status::Error("SetRate() while producing");
  if (!(rate >= 0)) return Status::Error("rate must be >= 0");
  options_.rate = rate;
  return Status::Ok();
}

void ProducerDriver::Start() {
  // The workers are idle here: their window state can be cleared without a race.
  for (auto& s : states_) {
    s->window_origin_ns.store(0, std::memory_order_relaxed);
    s->intervals.clear();
    s->cached_width = 0;
  }
  failures_before_ = Failures();
  stop_producing_.store(false, std::memory_order_relaxed);
  measuring_ = false;  // progress lines say "(warm-up)" until the window opens
  std::lock_guard<std::mutex> lock(mu_);
  Dispatch(-1);
  running_ = true;
}

void ProducerDriver::OpenWindow(Clock::time_point origin, std::chrono::nanoseconds interval) {
  window_origin_ = origin;
  window_interval_ = std::max(interval, std::chrono::nanoseconds(1));
  window_stats_begin_ = Snapshots();
  measuring_ = true;
  const auto origin_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(origin.time_since_epoch()).count());
  for (auto& s : states_) {
    s->window_interval_ns.store(static_cast<std::uint64_t>(window_interval_.count()),
                                std::memory_order_relaxed);
    s->window_origin_ns.store(origin_ns, std::memory_order_release);
  }
}

void ProducerDriver::WaitUntil(Clock::time_point deadline) {
  for (;;) {
    auto now = Clock::now();
    if (now >= deadline) return;
    auto wake = deadline;
    if (options_.progress_interval.count() > 0) {
      if (now >= last_progress_ + options_.progress_interval) {
        PrintProgress(false);
        continue;
      }
      wake = std::min(wake, last_progress_ + options_.progress_interval);
    }
    std::this_thread::sleep_until(wake);
  }
}

Status ProducerDriver::Stop() {
  if (!running_) return Status::Error("Stop() without Start()");
  window_stats_end_ = Snapshots();  // the window's end, before the drain
  stop_producing_.store(true, std::memory_order_relaxed);
  {
    std::unique_lock<std::mutex> lock(mu_);
    WaitForWorkers(lock);
    running_ = false;
  }
  std::int64_t produced = 0;
  for (auto& st : states_) produced += st->produced.load();
  round_base_ += static_cast<std::uint64_t>(produced);
  Status flushed = FlushAll();
  if (!flushed) return flushed;
  if (std::int64_t failed = Failures() - failures_before_; failed > 0) {
    return Status::Error(std::to_string(failed) + " records failed while producing continuously");
  }
  return flushed;
}

MeasuredWindow ProducerDriver::CloseWindow(Clock::time_point end) {
  MeasuredWindow w;
  const double width = std::chrono::duration<double>(window_interval_).count();
  w.seconds = std::chrono::duration<double>(end - window_origin_).count();
  const auto n = static_cast<std::size_t>(std::max<long>(1, std::lround(w.seconds / width)));
  w.intervals.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    w.intervals[i].seconds = i + 1 < n ? width : w.seconds - width * static_cast<double>(n - 1);
  }
  // The workers are idle (Stop) and the drain ran on this thread: nothing writes now.
  for (auto& s : states_) {
    s->window_origin_ns.store(0, std::memory_order_relaxed);
    for (std::size_t i = 0; i < std::min(n, s->intervals.size()); ++i) {
      w.intervals[i].records += s->intervals[i].records;
      w.intervals[i].value_bytes += s->intervals[i].value_bytes;
      w.intervals[i].sent += s->intervals[i].sent;
      w.intervals[i].latency.Merge(s->intervals[i].latency);
    }
    s->intervals.clear();
    s->cached_width = 0;
  }
  for (const auto& iv : w.intervals) {
    w.records += iv.records;
    w.value_bytes += iv.value_bytes;
    w.sent += iv.sent;
    w.latency.Merge(iv.latency);
  }
  for (std::size_t i = 0;
       i < instances_.size() && i < window_stats_begin_.size() && i < window_stats_end_.size();
       ++i) {
    StatsDelta d = Difference(window_stats_begin_[i], window_stats_end_[i]);
    d.stages = instances_[i]->stats.StagesBetween(window_stats_begin_[i], window_stats_end_[i]);
    w.stats.Add(d);
  }
  return w;
}

Status ProducerDriver::FlushAll() {
  tls_state = states_.back().get();
  const auto deadline = Clock::now() + message_timeout_ + options_.flush_grace;
  bool timed_out = false;
  for (auto& inst : instances_) {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        timed_out = rd_kafka_outq_len(inst->rk.get()) > 0;
        break;
      }
      // Short slices so long flushes (a dead broker) still print progress lines.
      int slice = static_cast<int>(std::min<std::int64_t>(left.count(), 1000));
      if (rd_kafka_flush(inst->rk.get(), slice) == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (options_.progress_interval.count() > 0 &&
          Clock::now() >= last_progress_ + options_.progress_interval) {
        PrintProgress(false);
      }
    }
  }
  Status status;
  if (timed_out) {
    int stuck = 0;
    for (auto& inst : instances_) {
      stuck += rd_kafka_outq_len(inst->rk.get());
      rd_kafka_purge(inst->rk.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      rd_kafka_flush(inst->rk.get(), 5000);  // serves the purge delivery reports
    }
    status = Status::Error("flush did not finish within message.timeout.ms + " +
                           std::to_string(options_.flush_grace.count()) + " ms; purged " +
                           std::to_string(stuck) + " queued records");
  }
  tls_state = nullptr;
  return status;
}

void ProducerDriver::PrintProgress(bool final_line) {
  auto now = Clock::now();
  double secs = std::chrono::duration<double>(now - last_progress_).count();
  std::int64_t delivered = 0, bytes = 0, lat_sum = 0, lat_count = 0, lat_max = 0;
  for (auto& s : states_) {
    delivered += s->delivered.load(std::memory_order_relaxed);
    bytes += s->delivered_bytes.load(std::memory_order_relaxed);
    lat_sum += s->window_sum_us.exchange(0, std::memory_order_relaxed);
    lat_count += s->window_count.exchange(0, std::memory_order_relaxed);
    lat_max = std::max(lat_max, s->window_max_us.exchange(0, std::memory_order_relaxed));
  }
  std::int64_t n = delivered - progress_delivered_;
  double mib = static_cast<double>(bytes - progress_bytes_) / (1024.0 * 1024.0);
  // kafka-producer-perf-test's interval line, so the two read side by side.
  std::fprintf(
      stderr,
      "%s%s%" PRId64
      " records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, "
      "%.1f ms max latency.%s%s\n",
      options_.progress_label.c_str(), options_.progress_label.empty() ? "" : ": ", n,
      secs > 0 ? static_cast<double>(n) / secs : 0.0, secs > 0 ? mib / secs : 0.0,
      lat_count ? static_cast<double>(lat_sum) / static_cast<double>(lat_count) / 1000.0 : 0.0,
      static_cast<double>(lat_max) / 1000.0, final_line ? " (final)" : "",
      measuring_ ? "" : " (warm-up)");
  last_progress_ = now;
  progress_delivered_ = delivered;
  progress_bytes_ = bytes;
}

std::vector<StatsAccumulator::Snapshot> ProducerDriver::Snapshots() const {
  std::vector<StatsAccumulator::Snapshot> out;
  for (const auto& inst : instances_) out.push_back(inst->stats.Get());
  return out;
}

void ProducerDriver::WaitForStatsEmit() {
  // Statistics are delivered through rd_kafka_poll: poll until each producer has emitted
  // once more, so its cumulative counters include everything sent so far.
  tls_state = states_.back().get();
  const auto deadline = Clock::now() + 3 * stats_interval_ + std::chrono::seconds(2);
  for (auto& inst : instances_) {
    const std::int64_t target = inst->stats.emits() + 1;
    while (inst->stats.emits() < target && Clock::now() < deadline) {
      rd_kafka_poll(inst->rk.get(), 10);
    }
  }
  tls_state = nullptr;
}

void ProducerDriver::BeginMeasurement() {
  WaitForStatsEmit();
  baseline_ = Snapshots();
  for (auto& s : states_) s->Reset();
  last_progress_ = Clock::now();
  progress_delivered_ = progress_bytes_ = 0;
  measuring_ = true;
}

ProduceTotals ProducerDriver::Collect() {
  WaitForStatsEmit();
  ProduceTotals t;
  std::map<int, std::int64_t> errors;
  for (auto& s : states_) {
    t.produced += s->produced.load();
    t.delivered += s->delivered.load();
    t.failed += s->failed.load();
    t.rejected += s->rejected.load();
    t.queue_full += s->queue_full.load();
    t.value_bytes += s->value_bytes.load();
    t.delivered_bytes += s->delivered_bytes.load();
    t.latency.Merge(s->latency);
    for (auto [code, n] : s->errors) errors[code] += n;
    AddCounts(t.delivered_per_partition, s->delivered_per_partition);
    AddCounts(t.markers_per_partition, s->markers_per_partition);
    t.transactions += s->transactions;
    t.transactions_aborted += s->transactions_aborted;
    t.commit_ns += s->commit_ns;
    if (t.transaction_error.empty()) t.transaction_error = s->transaction_error;
    if (t.digest_per_partition.size() < s->digest_per_partition.size())
      t.digest_per_partition.resize(s->digest_per_partition.size(), 0);
    for (std::size_t p = 0; p < s->digest_per_partition.size(); ++p)
      t.digest_per_partition[p] += s->digest_per_partition[p];
  }
  for (auto [code, n] : errors)
    t.errors[rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(code))] += n;
  auto now = Snapshots();
  for (std::size_t i = 0; i < instances_.size(); ++i) {
    StatsDelta d = Difference(baseline_[i], now[i]);
    d.stages = instances_[i]->stats.StagesBetween(baseline_[i], now[i]);
    t.stats.Add(d);
    if (!now[i].parse_error.empty() && t.stats_error.empty()) t.stats_error = now[i].parse_error;
    if (now[i].emits == baseline_[i].emits && t.stats_error.empty()) {
      t.stats_error = "no statistics emitted by producer " + std::to_string(i) + " within " +
                      std::to_string(3 * stats_interval_.count() + 2000) + " ms";
    }
    std::lock_guard<std::mutex> lock(instances_[i]->log_mu);
    // librdkafka (msgset writer) compresses only when the broker has the codec's feature
    // (its row's broker_feature). That is checked first: its own notice of the fallback
    // comes at most once a day by the monotonic clock (2.0.2), so it shows only on a
    // machine up for more than a day.
    const CodecInfo* codec = CodecForLibrdkafkaName(requested_codec_);
    const std::string_view feature = codec ? codec->broker_feature : std::string_view();
    for (const auto& [broker, features] : instances_[i]->broker_features) {
      if (feature.empty() || !t.codec_fallback.empty()) break;
      std::string list, token;
      list.append(",").append(features);
      token.append(",").append(feature).append(",");
      // Judge only brokers that negotiated the v2 format (ZSTD and LZ4 come with it).
      if (list.find(",MsgVer2,") == std::string::npos) continue;
      if (list.find(token) == std::string::npos) {
        t.codec_fallback = "broker " + broker + " lacks the " + std::string(feature) +
                           " feature (enabled: " + features + "), so librdkafka sends " +
                           requested_codec_ + " batches to it uncompressed";
      }
    }
    if (t.codec_fallback.empty()) t.codec_fallback = instances_[i]->codec_fallback;
  }
  t.resent_records = std::max<std::int64_t>(0, t.stats.txmsgs - t.produced);
  // The next measurement starts here.
  baseline_ = std::move(now);
  for (auto& s : states_) s->Reset();
  progress_delivered_ = progress_bytes_ = 0;
  return t;
}

}  // namespace kbench
