#pragma once

// librdkafka's statistics JSON (statistics.interval.ms), reduced to what kbench reports.
// Field meanings are librdkafka's STATISTICS.md: cumulative counters (txbytes, req,
// txretries, ...) grow over the handle's lifetime; window objects (batchsize, batchcnt)
// reset at every emit, so their sum/cnt must be added up across emits.

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "harness/status.h"

namespace kbench {

// Sum and count of one window (e.g. topics.*.batchsize), so averages combine exactly.
struct WindowTotals {
  double sum = 0;
  std::int64_t cnt = 0;
  double average() const { return cnt ? sum / static_cast<double>(cnt) : 0.0; }
  void Add(const WindowTotals& o) {
    sum += o.sum;
    cnt += o.cnt;
  }
};

// Where a record waits, from each broker's windows (STATISTICS.md): int_latency (produce
// call to batch: the client's queue), outbuf_latency (request built to sent: the socket
// buffer), rtt (request sent to response: network and broker) in µs, and throttle (the
// broker's quota delay) in ms. Each emit gives only percentiles of its own window, so a
// row's percentiles come from the mixture of the emits' distributions (StagePercentile).
enum class Stage { kIntLatency, kOutbufLatency, kRtt, kThrottle };
inline constexpr std::array<Stage, 4> kStages = {Stage::kIntLatency, Stage::kOutbufLatency,
                                                 Stage::kRtt, Stage::kThrottle};
struct StageWindow {
  Stage stage = Stage::kRtt;
  std::int64_t cnt = 0;
  // min, p50, p75, p90, p95, p99, p99.99, max: the points of its quantile function.
  std::array<double, 8> x{};
};
// The q-quantile (0 < q < 1) of the windows of one stage, weighting each by its count and
// interpolating linearly between each window's percentile points; NaN when none has data.
double StagePercentile(const std::vector<StageWindow>& windows, Stage stage, double q);

// One statistics emit of one client handle.
struct RdkafkaStats {
  // Cumulative, top level.
  std::int64_t txmsgs = 0;
  std::int64_t txmsg_bytes = 0;  // key + value bytes handed to batches (not acked)
  std::int64_t rxmsgs = 0;
  std::int64_t rxmsg_bytes = 0;
  // Cumulative, summed over brokers.
  std::int64_t tx_wire_bytes = 0;     // brokers.*.txbytes: bytes written to sockets
  std::int64_t produce_requests = 0;  // brokers.*.req.Produce
  std::int64_t wakeups = 0;           // brokers.*.wakeups: broker threads' poll-loop passes
  std::int64_t txretries = 0;         // brokers.*.txretries
  std::int64_t txerrs = 0;            // brokers.*.txerrs
  // Whether some broker carried req.Produce (librdkafka >= 1.0.0) and wakeups (>= 0.9.4):
  // a library that does not report a counter must not read as one that counted 0.
  bool has_produce_requests = false;
  bool has_wakeups = false;
  // Windows of this emit, summed over topics.
  WindowTotals batch_bytes;         // topics.*.batchsize: bytes per batch after compression
  WindowTotals batch_records;       // topics.*.batchcnt: records per batch
  std::vector<StageWindow> stages;  // this emit's windows with data, every broker
};

// Parses one JSON document. Missing optional sections (no brokers, no topics yet) are
// zeros; malformed JSON or wrong types are an error naming the field.
StatusOr<RdkafkaStats> ParseRdkafkaStats(std::string_view json);

// The same, keeping its buffers from one emit to the next (a client handle owns one: emits
// come every statistics.interval.ms, each as large as the client's partitions make it).
// Safe to call from several threads (each polling thread may serve a stats callback).
class StatsParser {
 public:
  StatsParser();
  ~StatsParser();
  StatsParser(const StatsParser&) = delete;
  StatsParser& operator=(const StatsParser&) = delete;
  StatusOr<RdkafkaStats> Parse(std::string_view json);

 private:
  struct Impl;  // simdjson's parser: its header stays out of every includer's
  std::unique_ptr<Impl> impl_;
};

// Thread-safe accumulation of a handle's emits (the stats callback runs on whichever
// thread polls): latest cumulative values, window totals added up.
class StatsAccumulator {
 public:
  // One emit as librdkafka passes it to the stats callback: parsed, then added (or its
  // error noted).
  void AddEmit(std::string_view json);
  void Add(const RdkafkaStats& emit);
  void NoteParseError(const std::string& message);

  struct Snapshot {
    RdkafkaStats cumulative;  // the latest emit's cumulative counters (stages: none)
    WindowTotals batch_bytes;
    WindowTotals batch_records;
    std::int64_t emits = 0;
    std::string parse_error;        // first parse error seen, if any
    std::size_t stage_history = 0;  // stage windows seen so far (an index into them)
  };
  Snapshot Get() const;
  std::int64_t emits() const;
  // The stage windows emitted between two snapshots; empty when the history was full
  // (kMaxStageHistory windows: hours of emits).
  std::vector<StageWindow> StagesBetween(const Snapshot& before, const Snapshot& after) const;
  static constexpr std::size_t kMaxStageHistory = 400000;

 private:
  StatsParser parser_;
  mutable std::mutex mu_;
  Snapshot snap_;
  std::vector<StageWindow> stage_history_;
  bool stage_history_full_ = false;
};

// What happened between two snapshots of the same handle.
struct StatsDelta {
  std::int64_t wire_bytes = 0;
  std::int64_t produce_requests = 0;
  std::int64_t wakeups = 0;
  // Both ends of every part reported it (see RdkafkaStats); a sum over handles is present
  // only when each handle's part is.
  bool has_produce_requests = false;
  bool has_wakeups = false;
  std::int64_t parts = 0;  // deltas added up (Difference gives 1)
  std::int64_t retries = 0;
  std::int64_t txmsg_bytes = 0;
  std::int64_t txmsgs = 0;  // records put into batches, counted again when re-sent
  WindowTotals batch_bytes;
  WindowTotals batch_records;
  std::vector<StageWindow> stages;  // filled by the caller (StagesBetween), not Difference
  void Add(const StatsDelta& o);
};
StatsDelta Difference(const StatsAccumulator::Snapshot& before,
                      const StatsAccumulator::Snapshot& after);

}  // namespace kbench
