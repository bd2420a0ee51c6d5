#pragma once

// librdkafka producer driver: N application threads share M producer instances
// round-robin (thread t uses producer t % M). Two ways to drive it, no Google Benchmark
// types in either (benchmarks and tests drive it the same way):
//   - rounds: produce a fixed number of records, then wait for every delivery report
//     (warm-up, topic fills, fixed-count runs);
//   - continuous: Start() produces without pause until Stop(); OpenWindow() marks the
//     start of a measured window, whose deliveries are bucketed per interval by delivery
//     time (counts) and by intended send time (latency), so a window never includes the
//     drain that a flush causes, and the pipeline stays full through it.
//
// Latency: every record carries its INTENDED send time in the delivery report opaque
// (nanoseconds on the steady clock, stored in the pointer value, no allocation). With a
// target rate the schedule fixes that time in advance (thread t's k-th record is due at
// start + (k*threads + t)/rate, one schedule from Start() to Stop()), so a stalled
// producer is charged for every record it delayed, pauses included (no coordinated
// omission); unthrottled, it is the time the thread last polled (at most 64 records before
// rd_kafka_producev(); a clock read per record cost a few % of throughput), including any
// queue-full retries: queueing, not latency. The delivery report callback records
// now - intended (now: when the serving poll began) into a histogram owned by the thread
// serving the callback (rd_kafka_poll/flush), so histograms are per thread and merged
// after the round or window. A thread polls every 64 records, and with a target rate also
// whenever it has time before its next record is due (waiting a millisecond or more inside
// rd_kafka_poll), so that a report is stamped when it arrived (at 10,000 records/s, 64
// records are 6.4 ms: more than a loopback round trip).
// rd_kafka_message_latency() is not used: it starts at enqueue and cannot see the
// schedule.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/admin.h"
#include "harness/histogram.h"
#include "harness/partition_check.h"
#include "harness/payload.h"
#include "harness/rdkafka_stats.h"
#include "harness/status.h"

namespace kbench {

struct ProducerInstance;   // one rd_kafka_t and what its callbacks collect (producer.cc)
struct DriverThreadState;  // per-thread counters and histogram (producer.cc)

struct ProducerOptions {
  // Complete librdkafka settings in the order they apply (bootstrap.servers included).
  // Must leave statistics.interval.ms > 0: counters come from statistics.
  ClientSettings settings;
  std::string topic;
  int threads = 1;
  int producers = 1;
  double rate = 0;  // records/s over all threads; 0 = as fast as possible
  // Extra time a flush may take beyond message.timeout.ms before the rest is purged.
  std::chrono::milliseconds flush_grace{10000};
  // A progress line on stderr at this interval while a round runs; 0 = none.
  std::chrono::milliseconds progress_interval{5000};
  std::string progress_label;  // prefix of progress lines (the benchmark name)
  // Sum RecordDigest over each partition's delivered records (for a topic that is read
  // back and checked record by record). Hashes every value: off in timed rows. Needs
  // acks 1 or all: with acks=0 delivery reports carry no offset.
  bool digest_records = false;
  // Carry each record's intended send time (steady-clock nanoseconds, 8 bytes in host
  // order: the consumer runs on the same host) in a header named kSendTimeHeader, for an
  // end-to-end latency measured where the record is read (benchmarks/end_to_end_bench.cc).
  bool stamp_send_time = false;
  // > 0: transactional producers (one per thread: producers == threads), each committing
  // a transaction every `transaction_records` records it sends (and the open one when its
  // share ends). rd_kafka_init_transactions runs at Create (not timed); begin and commit
  // run in the producing thread, so their cost is in the time and the latency. Each commit
  // (and abort) writes one control record per partition the transaction touched, which
  // the totals count (ProduceTotals::markers_per_partition) for the end-offset check.
  std::int64_t transaction_records = 0;
  // Per init, commit or abort call; at most message.timeout.ms + 5 s.
  std::chrono::milliseconds transaction_timeout{30000};
};
inline constexpr const char* kSendTimeHeader = "kbench.t";

// One interval of a measured window: records delivered in it (by delivery time) and the
// latency of records intended to be sent in it.
struct IntervalSample {
  double seconds = 0;  // width (the last interval of a window may be shorter)
  std::int64_t records = 0;
  std::int64_t value_bytes = 0;
  std::int64_t sent = 0;  // accepted by rd_kafka_producev, by intended send time
  LatencyHistogram latency;
};

// A measured window (OpenWindow .. CloseWindow).
struct MeasuredWindow {
  double seconds = 0;
  std::int64_t records = 0;      // delivered within the window
  std::int64_t value_bytes = 0;  // their value bytes
  // Accepted by rd_kafka_producev and intended within the window: a record due before the
  // window but sent late inside it, or one sent after the window's end before Stop(), is not.
  std::int64_t sent = 0;
  LatencyHistogram latency;  // records intended within the window
  std::vector<IntervalSample> intervals;
  // librdkafka statistics from the last emit before OpenWindow to the last before Stop
  // (emits come every statistics.interval.ms, so both ends lag alike).
  StatsDelta stats;
};

// Everything measured since BeginMeasurement().
struct ProduceTotals {
  std::int64_t produced = 0;         // accepted by rd_kafka_producev
  std::int64_t delivered = 0;        // delivery report without error
  std::int64_t failed = 0;           // delivery report with an error (incl. purged)
  std::int64_t rejected = 0;         // rd_kafka_producev errors other than queue full
  std::int64_t queue_full = 0;       // QUEUE_FULL answers, each followed by poll and retry
  std::int64_t value_bytes = 0;      // value bytes of produced records
  std::int64_t delivered_bytes = 0;  // value bytes of delivered records
  std::map<std::string, std::int64_t> errors;  // error name -> count (failed + rejected)
  // Delivered records per partition (from the delivery reports), for end-offset checks
  // that a loss in one partition and a duplicate in another cannot cancel out.
  PartitionCounts delivered_per_partition;
  // Per partition, the sum of RecordDigest over delivered records (digest_records only).
  std::vector<std::uint64_t> digest_per_partition;
  LatencyHistogram latency;  // µs, delivered records only
  StatsDelta stats;          // summed over producer instances
  // Retries: librdkafka retries Produce at message level (records go back to the
  // partition queue and into a new batch), which its request counter `txretries` does
  // not count; records batched more than once (txmsgs beyond produced) do show them.
  std::int64_t resent_records = 0;
  std::int64_t retries() const { return stats.retries + resent_records; }
  // Transactions (ProducerOptions::transaction_records): committed, aborted (after an
  // error that requires it; the row then fails), the commit calls' total time, and per
  // partition the control records (commit or abort markers) they wrote: a partition's end
  // offset is its delivered records plus its markers.
  std::int64_t transactions = 0;
  std::int64_t transactions_aborted = 0;
  std::int64_t commit_ns = 0;
  PartitionCounts markers_per_partition;
  std::string transaction_error;  // the first error of a begin, commit or abort
  std::string codec_fallback;     // librdkafka's notice when it sent a batch uncompressed
  std::string stats_error;        // statistics missing or unparsable

  std::int64_t undelivered() const { return produced - delivered; }
  // Ok when every produced record was delivered and nothing was rejected.
  Status AccountingError() const;
};

class ProducerDriver {
 public:
  // Creates the producers and threads (not timed). `records` must outlive the driver.
  static StatusOr<std::unique_ptr<ProducerDriver>> Create(const ProducerOptions& options,
                                                          const RecordSet& records);
  ~ProducerDriver();
  ProducerDriver(const ProducerDriver&) = delete;
  ProducerDriver& operator=(const ProducerDriver&) = delete;

  // Produces `count` records spread over the threads, then flushes every producer. Fails
  // when any record of the round failed, or when the flush outlives message.timeout.ms +
  // flush_grace (the rest is then purged and counted as failed, so totals stay complete).
  Status RunRound(std::int64_t count);

  // Continuous production: every thread produces until Stop(), at the target rate (one
  // schedule from Start on) or unthrottled. Not timed by the driver.
  void Start();
  // Changes the target rate (records/s over all threads; 0 = unthrottled) for the next
  // Start() or round. Only between runs: fails while production is running.
  Status SetRate(double rate);
  // Marks the start of the measured window at `origin` (now or just before): deliveries
  // from then on are bucketed into intervals of `interval` (choose one that divides the
  // window, so that no interval reaches into the drain).
  void OpenWindow(std::chrono::steady_clock::time_point origin, std::chrono::nanoseconds interval);
  // Waits (printing progress lines) until `deadline`. Production goes on meanwhile.
  void WaitUntil(std::chrono::steady_clock::time_point deadline);
  // Stops the threads and flushes every producer (the drain, after the window). Fails like
  // RunRound when records failed or the flush timed out.
  Status Stop();
  // After Stop: the window from its origin to `end` (deliveries after `end`, i.e. during
  // the drain, count only in the totals; records intended before `end` keep their latency).
  MeasuredWindow CloseWindow(std::chrono::steady_clock::time_point end);

  // Zeroes the totals and snapshots statistics (waits for a fresh statistics emit).
  void BeginMeasurement();
  // Totals since BeginMeasurement (waits for a statistics emit that covers the last round).
  ProduceTotals Collect();

  // The requested codec (compression.codec / compression.type, default none).
  const std::string& requested_codec() const { return requested_codec_; }
  int producers() const { return static_cast<int>(instances_.size()); }
  // Records accepted by rd_kafka_producev since BeginMeasurement and not yet reported
  // (delivered or failed): what the client holds in its queues and requests right now.
  std::int64_t InFlight() const;
  // Time rd_kafka_init_transactions took over all producers at Create (transactions only).
  std::int64_t init_transactions_ns() const { return init_transactions_ns_; }

 private:
  ProducerDriver() = default;
  void WorkerLoop(int index);
  // count < 0: until stop_producing_.
  void ProduceShare(int index, std::int64_t count, std::chrono::steady_clock::time_point start);
  void Dispatch(std::int64_t count);  // under mu_: starts a round (or continuous production)
  void WaitForWorkers(std::unique_lock<std::mutex>& lock);
  Status FlushAll();
  void WaitForStatsEmit();
  void PrintProgress(bool final_line);
  std::vector<StatsAccumulator::Snapshot> Snapshots() const;
  std::int64_t Failures() const;  // failed + rejected over every thread
  // Transactions, in the producing thread: begin, and commit (abort when the error
  // requires it); a failure is noted in the thread's state and ends its share.
  static Status BeginTransaction(rd_kafka_t* rk, DriverThreadState& s);
  static Status EndTransaction(rd_kafka_t* rk, DriverThreadState& s, int timeout_ms);

  ProducerOptions options_;
  const RecordSet* records_ = nullptr;
  std::string requested_codec_ = "none";
  std::chrono::milliseconds message_timeout_{300000};
  std::chrono::milliseconds stats_interval_{0};
  std::int64_t init_transactions_ns_ = 0;
  std::vector<std::unique_ptr<ProducerInstance>> instances_;
  std::vector<std::unique_ptr<DriverThreadState>> states_;  // one per worker + one for this thread
  std::vector<std::thread> workers_;

  // Round dispatch.
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t generation_ = 0;
  int done_ = 0;
  bool stop_ = false;
  std::int64_t round_count_ = 0;
  std::uint64_t round_base_ = 0;  // record index the round starts at (cycles the set)
  std::chrono::steady_clock::time_point round_start_;
  std::atomic<bool> stop_producing_{false};  // ends continuous production
  bool running_ = false;                     // Start() without Stop()
  std::chrono::steady_clock::time_point window_origin_;
  std::chrono::nanoseconds window_interval_{0};
  std::vector<StatsAccumulator::Snapshot> window_stats_begin_, window_stats_end_;
  std::int64_t failures_before_ = 0;  // failed + rejected when Start() was called

  std::vector<StatsAccumulator::Snapshot> baseline_;
  // Progress line state.
  std::chrono::steady_clock::time_point last_progress_;
  std::int64_t progress_delivered_ = 0;
  std::int64_t progress_bytes_ = 0;
  bool measuring_ = false;  // BeginMeasurement was called: lines before it say "(warm-up)"
};

}  // namespace kbench
