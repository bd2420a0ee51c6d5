#pragma once

// librdkafka's statistics JSON (statistics.interval.ms), reduced to what kbench reports.
// Field meanings are librdkafka's STATISTICS.md: cumulative counters (txbytes, req,
// txretries, ...) grow over the handle's lifetime; window objects (batchsize, batchcnt)
// reset at every emit, so their sum/cnt must be added up across emits.

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

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
  std::int64_t txretries = 0;         // brokers.*.txretries
  std::int64_t txerrs = 0;            // brokers.*.txerrs
  // Windows of this emit, summed over topics.
  WindowTotals batch_bytes;    // topics.*.batchsize: bytes per batch after compression
  WindowTotals batch_records;  // topics.*.batchcnt: records per batch
};

// Parses one JSON document. Missing optional sections (no brokers, no topics yet) are
// zeros; malformed JSON or wrong types are an error naming the field.
Status ParseRdkafkaStats(std::string_view json, RdkafkaStats* out);

// Thread-safe accumulation of a handle's emits (the stats callback runs on whichever
// thread polls): latest cumulative values, window totals added up.
class StatsAccumulator {
 public:
  void Add(const RdkafkaStats& emit);
  void NoteParseError(const std::string& message);

  struct Snapshot {
    RdkafkaStats cumulative;  // the latest emit's cumulative counters
    WindowTotals batch_bytes;
    WindowTotals batch_records;
    std::int64_t emits = 0;
    std::string parse_error;  // first parse error seen, if any
  };
  Snapshot Get() const;

 private:
  mutable std::mutex mu_;
  Snapshot snap_;
};

// What happened between two snapshots of the same handle.
struct StatsDelta {
  std::int64_t wire_bytes = 0;
  std::int64_t produce_requests = 0;
  std::int64_t retries = 0;
  std::int64_t txmsg_bytes = 0;
  std::int64_t txmsgs = 0;  // records put into batches, counted again when re-sent
  WindowTotals batch_bytes;
  WindowTotals batch_records;
  void Add(const StatsDelta& o);
};
StatsDelta Difference(const StatsAccumulator::Snapshot& before,
                      const StatsAccumulator::Snapshot& after);

}  // namespace kbench
