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
// Reference row in the same run: `Produce/bare_producev/...` is a plain rd_kafka_producev
// loop with the same settings, warm-up and window and no kbench driver code; `Produce/send`
// with the same parameters should reach at least 95 % of its records/s.

#include <array>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <benchmark/benchmark.h>

#include "fixtures/cluster.h"
#include "fixtures/counters.h"
#include "fixtures/family.h"
#include "fixtures/matrix_spec.h"
#include "fixtures/options.h"
#include "fixtures/rate_search.h"
#include "fixtures/runner.h"
#include "fixtures/stage_counters.h"
#include "fixtures/target.h"
#include "fixtures/window.h"
#include "harness/partition_check.h"
#include "harness/payload.h"
#include "harness/producer.h"
#include "harness/status.h"

namespace kbench::bench {
namespace {

// ------------------------------------------------------------------ parameters

// Records per iteration: large enough that batching reaches a steady state and thread
// start-up is noise, small enough that --benchmark_min_time=0.01 stays quick.
constexpr std::int64_t kRecordsPerIterationMock = 20000;
constexpr std::int64_t kRecordsPerIterationLive = 100000;
// How long the end-offset check waits for followers to advance the high watermark.
constexpr std::chrono::seconds kEndOffsetWait{15};
using counters::kDeliveredRecords;
using counters::kDuplicateRecords;
using counters::kEndOffsets;
using counters::kLostRecords;
using counters::kQueueFull;

// kbench's defaults, set explicitly so results do not depend on the librdkafka version's
// own defaults (linger.ms changed from 0.5 to 5 in 1.5.0). A parameter appears in the name
// only when it differs from these.
struct ProduceParams {
  static constexpr std::string_view kFlag = "--produce";
  std::string_view variant = "send";
  std::string_view acks = "all";  // static strings only (constants below)
  CodecSpec codec{};
  SizeSpec record_bytes{100, 100};
  PayloadSpec payload{};  // az, what kafka-producer-perf-test sends
  int linger_ms = 5;
  int batch_bytes = 1000000;
  int partitions = 2;
  int replication = 1;
  int max_in_flight = 5;
  bool idempotence = false;
  int threads = 1;
  int producers = 1;
  std::int64_t warmup = -1;              // records; -1 = 10 % of an iteration
  std::int64_t rate = 0;                 // records/s overall; 0 = unthrottled
  KeySpec keys{};                        // none: the payload's keys (null for all but `repeated`)
  std::int64_t transaction_records = 0;  // > 0: transactional, a commit every N per thread
  std::string_view topic_codec = "producer";  // the topic's compression.type
  std::uint64_t seed = kDefaultPayloadSeed;
  ClusterRun run;  // the command line's cluster, settings, window; not in the name
  // The records cycled through, planned at registration (PlanRecords) from the fields above.
  SendRecordsPlan records{};
};

// ------------------------------------------------------------------ the axes

constexpr int kProducersPerThread = -1;  // producers=per_thread, resolved after expansion

int ParseInt(std::string_view key, std::string_view text, long long min, long long max) {
  return ParseSpecInt("--produce", key, text, min, max);
}

// Values that become part of the name are string_views into these static strings.
template <std::size_t N>
std::string_view OneOf(std::string_view key, std::string_view value,
                       const std::array<std::string_view, N>& choices) {
  for (std::string_view c : choices) {
    if (c == value) return c;
  }
  std::string list;  // "0, 1 or all"
  for (std::size_t i = 0; i < N; ++i) {
    list.append(i == 0 ? "" : i + 1 == N ? " or " : ", ").append(choices[i]);
  }
  throw UsageError("--produce: " + std::string(key) + " must be " + list + ", not '" +
                   std::string(value) + "'");
}
constexpr std::array<std::string_view, 3> kAcks = {"0", "1", "all"};
constexpr std::array<std::string_view, 3> kVariants = {"send", "bare_producev", "max_rate"};
// Kafka's compression.type values for a topic.
constexpr std::array<std::string_view, 6> kTopicCodecs = {"producer", "uncompressed", "gzip",
                                                          "snappy",   "lz4",          "zstd"};

// --codec is shared with the Codec family, whose levels go further (zstd 19, lz4 -1), so
// codecs librdkafka cannot write are skipped here with a note rather than failing a run
// that may not even select Produce.
CodecSpec ProduceCodec(CodecSpec c) {
  if (Status s = LibrdkafkaCanWrite(c); !s) throw UsageError(s.message());
  return c;
}

// One row per --produce key, in the order keys appear in names and settings
// (fixtures/matrix_spec.h). Adding a key: a ProduceParams field and a row here, plus its
// driver support where the driver must do something new.
using ProduceAxis = AxisRow<ProduceParams>;

const std::vector<ProduceAxis>& ProduceAxes() {
  static const std::vector<ProduceAxis> axes = {
      {"acks", "0, 1 or all (default all)",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         p.acks = OneOf(k, v == "-1" ? "all" : v, kAcks);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) { n.Add(k, p.acks); },
       [](const ProduceParams& p, ClientSettings& s) { s.emplace_back("acks", p.acks); }},
      {"codec", "a codec librdkafka writes, optionally :LEVEL (default none)",
       [](ProduceParams& p, std::string_view, std::string_view v) {
         int level = p.codec.level;
         p.codec = ProduceCodec(ParseCodecSpec(v));
         if (v.find(':') == std::string_view::npos) p.codec.level = level;
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) { n.Add(k, p.codec.Name()); },
       [](const ProduceParams& p, ClientSettings& s) {
         s.emplace_back("compression.codec", p.codec.info().librdkafka_name);
         s.emplace_back("compression.level",
                        p.codec.level == 0 ? "-1" : std::to_string(p.codec.level));
       }},
      // Checked against the codec's librdkafka range once the row is complete.
      {"level", "compression level, within the codec's librdkafka range (default: its own)",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         p.codec.level = ParseInt(k, v, -100, 100);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.codec.level != 0) n.Add(k, p.codec.level);
       },
       nullptr},
      {"record_bytes", "value size, fixed (100) or a range (250-750) (default 100)",
       [](ProduceParams& p, std::string_view, std::string_view v) {
         p.record_bytes = ParseSizeSpec(v);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         n.Add(k, p.record_bytes.Name());
       },
       nullptr},
      {"threads", "application threads producing (default 1)",
       ParseIntAxis<&ProduceParams::threads, 1, 256>, NameAlways<&ProduceParams::threads>, nullptr},
      {"producers", "producer instances the threads share round-robin, or per_thread (default 1)",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         // per_thread: as many as threads, whichever order the keys come in (see expansion).
         p.producers = v == "per_thread" ? kProducersPerThread : ParseInt(k, v, 1, 256);
       },
       NameAlways<&ProduceParams::producers>, nullptr},
      {"payload", "a --payload kind (default az)",
       [](ProduceParams& p, std::string_view, std::string_view v) {
         p.payload = ParsePayloadSpec(v);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.payload.Name() != ProduceParams{}.payload.Name()) n.Add(k, p.payload.Name());
         if (p.records.cycles()) n.Add("repeats", "allowed");
       },
       nullptr},
      {"linger_ms", "linger.ms (default 5)", ParseIntAxis<&ProduceParams::linger_ms, 0, 900000>,
       NameIfChanged<&ProduceParams::linger_ms>,
       [](const ProduceParams& p, ClientSettings& s) {
         s.emplace_back("linger.ms", std::to_string(p.linger_ms));
       }},
      {"batch_bytes", "batch.size (default 1000000)",
       ParseIntAxis<&ProduceParams::batch_bytes, 1, 2147483647>,
       NameIfChanged<&ProduceParams::batch_bytes>,
       [](const ProduceParams& p, ClientSettings& s) {
         s.emplace_back("batch.size", std::to_string(p.batch_bytes));
       }},
      {"partitions", "partitions of the topic (default 2)",
       ParseIntAxis<&ProduceParams::partitions, 1, 10000>,
       NameIfChanged<&ProduceParams::partitions>, nullptr},
      {"replication", "replication factor of the topic (default 1)",
       ParseIntAxis<&ProduceParams::replication, 1, 32>, NameIfChanged<&ProduceParams::replication>,
       nullptr},
      {"max_in_flight", "max.in.flight.requests.per.connection (default 5)",
       ParseIntAxis<&ProduceParams::max_in_flight, 1, 1000000>,
       NameIfChanged<&ProduceParams::max_in_flight>,
       [](const ProduceParams& p, ClientSettings& s) {
         s.emplace_back("max.in.flight.requests.per.connection", std::to_string(p.max_in_flight));
       }},
      {"idempotence", "enable.idempotence, true or false (default false)",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         p.idempotence = OneOf(k, v, std::array<std::string_view, 2>{"true", "false"}) == "true";
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.idempotence) n.Add(k, "true");
       },
       [](const ProduceParams& p, ClientSettings& s) {
         // A transactional producer is idempotent (librdkafka refuses an explicit false).
         const bool on = p.idempotence || p.transaction_records > 0;
         s.emplace_back("enable.idempotence", on ? "true" : "false");
       }},
      {"keys",
       "none, uniform or zipf (0.99) over key_count keys, via the default partitioner "
       "(default none: null keys)",
       [](ProduceParams& p, std::string_view, std::string_view v) {
         p.keys.distribution = ParseKeyDistribution(v);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.keys.distribution != KeyDistribution::kNone) n.Add(k, p.keys.Name());
       },
       nullptr},
      {"key_count", "distinct keys when keys is uniform or zipf (default 1000)",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         p.keys.count =
             static_cast<std::size_t>(ParseInt(k, v, 1, static_cast<long long>(kMaxDistinctKeys)));
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.keys.distribution != KeyDistribution::kNone) n.Add(k, p.keys.count);
       },
       nullptr},
      {"topic_codec",
       "the topic's compression.type: producer (keep the batches) or uncompressed, gzip, "
       "snappy, lz4, zstd, which the broker recompresses into (KAFKA-15418; live only)",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         p.topic_codec = OneOf(k, v, kTopicCodecs);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.topic_codec != "producer") n.Add(k, p.topic_codec);
       },
       nullptr},
      {"transaction_records",
       "transactional producers, one per thread, committing every N records (acks=all; "
       "default 0: none)",
       ParseIntAxis<&ProduceParams::transaction_records, 0, 100000000>,
       NameIfChanged<&ProduceParams::transaction_records>, nullptr},
      {"warmup", "records produced before measuring (default: 10 % of an iteration)",
       ParseIntAxis<&ProduceParams::warmup, 0, 2000000000>, NameIfChanged<&ProduceParams::warmup>,
       nullptr},
      {"rate", "offered load in records/s, open loop (default 0: unthrottled)",
       ParseIntAxis<&ProduceParams::rate, 0, 2000000000>, NameIfChanged<&ProduceParams::rate>,
       nullptr},
      // The variant is the name's second component (Produce/VARIANT/...), not a key:value.
      {"variant", "send, bare_producev (the reference loop) or max_rate (default send)",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         p.variant = OneOf(k, v, kVariants);
       },
       nullptr, nullptr},
  };
  return axes;
}

// The topic's configs (compression.type only when it is not the broker's default).
std::vector<std::pair<std::string, std::string>> TopicConfigs(const ProduceParams& p) {
  if (p.topic_codec == "producer") return {};
  return {{"compression.type", std::string(p.topic_codec)}};
}

// The benchmark's own client settings, from the axes that map to settings.
ClientSettings BenchmarkSettings(const ProduceParams& p) { return AxisSettings(ProduceAxes(), p); }

// Produce/VARIANT/key:value/..., each axis adding itself when its row says so.
BenchName Name(const ProduceParams& p) {
  BenchName name("Produce", p.variant);
  AddAxisNames(ProduceAxes(), p, name);
  return name;
}

// For --help: one line per key.
FamilyKeys ProduceKeys() { return AxisKeys("--produce", ProduceAxes()); }

// ------------------------------------------------------------------ default rows

// The rows that run without --produce, as --produce specs expanded by the same parser.
// Command-line options replace parts of them: --record-bytes the record size of every row,
// --payload the payload of every row but `keep_payload` ones, --codec the `codec_group`
// rows (by one acks=all row per codec, at the group's record size). A row whose name is
// already registered (the same parameters, e.g. after --record-bytes=100) runs once.
struct DefaultRows {
  std::string_view spec;
  std::string_view why;
  bool codec_group = false;
  bool keep_payload = false;
  bool unless_find_max_rate = false;
};
const std::vector<DefaultRows>& ProduceDefaultRows() {
  static const std::vector<DefaultRows> rows = {
      // bare_producev and send with identical settings, side by side (RegisterPaired).
      {"variant=bare_producev|send,acks=1,record_bytes=100", "the reference pair"},
      {"acks=0|1|all,codec=none,record_bytes=500", "acks x codec at one thread", true},
      {"acks=all,codec=gzip|snappy|lz4|zstd,record_bytes=500", "", true},
      {"acks=1,codec=zstd,record_bytes=500", "", true},
      // Seed 000 at small scale: random 250-750 byte records, acks=1, linger 1 ms, 64 KiB
      // batches, threads sharing producers round-robin ...
      {"acks=1,record_bytes=250-750,payload=random,linger_ms=1,batch_bytes=65536,threads=4,"
       "producers=1|2|4",
       "seed 000: threads sharing producers"},
      {"acks=1,record_bytes=250-750,payload=random,linger_ms=1,batch_bytes=65536,threads=8,"
       "producers=1|2|4|8",
       ""},
      // ... and its "repeated bodies" variant.
      {"acks=1,record_bytes=250-750,payload=repeated,linger_ms=1,batch_bytes=65536,threads=8,"
       "producers=2",
       "", false, true},
      // Seed 004's shape: 2000-byte records, batch.size 8196, 15 partitions.
      {"acks=1,record_bytes=2000,batch_bytes=8196,partitions=15", "seed 004"},
      // Keyed records (KIP-1299: null keys make producer benchmarks optimistic): with null
      // keys the sticky partitioner fills one partition's batch at a time; keys spread each
      // linger's records over every partition, in smaller batches.
      {"acks=1,record_bytes=500,partitions=16,keys=none|uniform|zipf", "keys"},
      // Many partitions (librdkafka #2270: client CPU grows with the partitions written).
      {"acks=1,record_bytes=500,keys=uniform,key_count=100000,partitions=100|1000",
       "many partitions"},
      // Transactions: a commit every 100 records (commit-bound) and every 10,000.
      {"acks=all,record_bytes=500,transaction_records=100|10000", "transactions"},
      // Nothing lost, nothing duplicated, at the cost of ordering guarantees.
      {"idempotence=true,record_bytes=500", "idempotence"},
      // Open loop: latency from each record's intended send time, at fixed rates (records/s)
      // picked from measurements of the closed-loop row of the same shape,
      // Produce/send/acks:1/codec:none/record_bytes:500, on the 2-core reference machine
      // against a local Kafka 4.4 broker (2 s windows): 205k records/s (3 repetitions,
      // machine busy with other work), 349k (1 repetition) and 725k (the quick profile, 5
      // processes). At the median of those, 349k, these are about 30 % and 55 %: loads
      // where latency, not throughput, varies, and that stay below saturation even when the
      // machine is busy (where a row falls short of its rate anyway, it says so:
      // rate_shortfall). Names keep the number, so they stay fixed when the machine changes.
      {"acks=1,record_bytes=500,rate=100000|200000", "open loop"},
      // The rate the open-loop rows above are fractions of, searched (the full profile runs
      // it; a search takes several windows). --find-max-rate gives every send row its own.
      {"variant=max_rate,acks=1,record_bytes=500", "maximum rate", false, false, true},
  };
  return rows;
}

// ------------------------------------------------------------------ settings

// kbench's own client defaults (before the user's settings): statistics for the counters,
// and a message timeout short enough that a dead broker fails a benchmark in seconds
// rather than librdkafka's 5 minutes.
const ClientSettings& DriverDefaults() {
  static const ClientSettings defaults = {{"statistics.interval.ms", "100"},
                                          {"message.timeout.ms", "30000"}};
  return defaults;
}

// Records per iteration of fixed-count bursts (--records-per-iteration; windows otherwise),
// and per warm-up when the row sets none.
std::int64_t RecordsPerIteration(const ClusterRun& run) {
  if (run.records_per_iteration > 0) return run.records_per_iteration;
  return run.bootstrap.empty() ? kRecordsPerIterationMock : kRecordsPerIterationLive;
}

// ------------------------------------------------------------------ work

// Shared by both rows: the cluster and topic, the records, the end-offset check.
class ProduceSetup {
 public:
  // The row's cluster and topic, which a Work's factory creates first.
  static StatusOr<std::unique_ptr<BenchCluster>> CreateCluster(const ProduceParams& p) {
    return BenchCluster::Create(p.run, *p.run.state, "produce",
                                TopicLayout{p.partitions, p.replication, TopicConfigs(p)});
  }
  ProduceSetup(const ProduceParams& p, std::unique_ptr<BenchCluster> cluster)
      : params_(p),
        cluster_(std::move(cluster)),
        records_(
            PayloadGenerator(p.payload, p.record_bytes, p.seed).GenerateSendRecords(p.records)) {
    records_.DrawKeys(p.keys, p.seed);
    // The user's settings sit between kbench's defaults and the benchmark's parameters.
    settings_ =
        MergeSettings(Concat({{"bootstrap.servers", cluster_->bootstrap()}}, DriverDefaults()),
                      p.run.client_settings, BenchmarkSettings(p), *p.run.state);
  }

  // Per partition, the end offsets against the records delivered to it: with every acks,
  // since acks=0 loses records silently (its delivery reports only say "sent").
  // With transactions, each partition of a broker's log also holds the markers its
  // transactions wrote. librdkafka's mock cluster answers EndTxn without writing any
  // (its end offsets equal the delivered records), so there they are not expected.
  Status CheckEndOffsets(const PartitionCounts& delivered, const PartitionCounts& markers = {}) {
    if (cluster_->is_mock()) return CheckExpectedEndOffsets(delivered, "delivered");
    PartitionCounts expected = delivered;
    AddCounts(expected, markers);
    return CheckExpectedEndOffsets(expected, markers.empty() ? "delivered" : "delivered+markers");
  }
  Status CheckExpectedEndOffsets(const PartitionCounts& delivered, const char* what) {
    StatusOr<std::vector<std::int64_t>> ends = cluster_->AwaitEndOffsets(delivered, kEndOffsetWait);
    if (!ends) return ends.status();
    end_offsets_ = TotalCount(*ends);
    PartitionComparison c = ComparePartitionCounts(delivered, *ends, what, "end offset");
    lost_records_ = c.lost;
    duplicate_records_ = c.duplicated;
    return EndOffsetError(c, params_.run.allow_loss);
  }
  // Counters of the last check, in every row's JSON (0 when nothing is missing).
  void ReportEndOffsets(benchmark::State& state, std::int64_t delivered_total) const {
    state.counters[kDeliveredRecords] = counters::Value(static_cast<double>(delivered_total));
    state.counters[kEndOffsets] = counters::Value(static_cast<double>(end_offsets_));
    state.counters[kLostRecords] = counters::Value(static_cast<double>(lost_records_));
    state.counters[kDuplicateRecords] = counters::Value(static_cast<double>(duplicate_records_));
  }

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
  std::int64_t warmup() const {
    return params_.warmup >= 0 ? params_.warmup : RecordsPerIteration(params_.run) / 10;
  }
  std::int64_t AverageValueBytes(std::int64_t count) const {
    return static_cast<std::int64_t>(static_cast<double>(records_.total_value_bytes()) /
                                     static_cast<double>(records_.size()) *
                                     static_cast<double>(count));
  }

 private:
  static ClientSettings Concat(ClientSettings a, const ClientSettings& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  ProduceParams params_;
  std::unique_ptr<BenchCluster> cluster_;
  RecordSet records_;
  ClientSettings settings_;
  std::int64_t end_offsets_ = -1;  // last checked sum; -1 = not checked yet
  std::int64_t lost_records_ = 0, duplicate_records_ = 0;
};

// Latency counters by load model: open loop (a target rate) is latency, closed loop is
// queueing (fixtures/counters.h).
void ReportLatency(benchmark::State& state, const LatencyHistogram& lat, bool open_loop) {
  auto value = [](std::uint64_t us) { return counters::Value(static_cast<double>(us)); };
  state.counters[open_loop ? counters::kP50Us : counters::kQueueP50Us] =
      value(lat.Percentile(0.50));
  state.counters[open_loop ? counters::kP95Us : counters::kQueueP95Us] =
      value(lat.Percentile(0.95));
  state.counters[open_loop ? counters::kP99Us : counters::kQueueP99Us] =
      value(lat.Percentile(0.99));
  state.counters[open_loop ? counters::kP999Us : counters::kQueueP999Us] =
      value(lat.Percentile(0.999));
  state.counters[open_loop ? counters::kMaxUs : counters::kQueueMaxUs] = value(lat.max());
  state.counters[open_loop ? counters::kAvgUs : counters::kQueueAvgUs] =
      counters::Value(lat.mean());
}

// The window's records/s, MB/s and p99 per interval, and their coefficient of variation.
IntervalSeries ToSeries(const MeasuredWindow& w) {
  IntervalSeries series;
  for (const IntervalSample& iv : w.intervals) {
    const double secs = iv.seconds > 0 ? iv.seconds : 1;
    series.seconds.push_back(iv.seconds);
    series.records_per_second.push_back(static_cast<double>(iv.records) / secs);
    series.mb_per_second.push_back(static_cast<double>(iv.value_bytes) / secs / (1024.0 * 1024.0));
    series.p99_us.push_back(static_cast<double>(iv.latency.Percentile(0.99)));
  }
  series.latency_buckets = w.latency.Buckets();
  series.latency_count = w.latency.count();
  series.latency_sum_us = w.latency.sum();
  series.latency_min_us = w.latency.min();
  series.latency_max_us = w.latency.max();
  return series;
}

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
    if (window) {
      state.SetItemsProcessed(window->records);
      state.SetBytesProcessed(window->value_bytes);
      ReportLatency(state, window->latency, open_loop);
      ReportStats(state, window->stats, t.failed + t.rejected, t.retries());
      intervals_ = ToSeries(*window);
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
      ReportStats(state, t.stats, t.failed + t.rejected, t.retries());
    }
    state.counters[kQueueFull] = counters::Value(static_cast<double>(t.queue_full));
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

  static void ReportStats(benchmark::State& state, const StatsDelta& s, std::int64_t errors,
                          std::int64_t retries) {
    state.counters[counters::kWireBytesPerSecond] =
        counters::Rate(static_cast<double>(s.wire_bytes));
    state.counters[counters::kAvgBatchBytes] = counters::Value(s.batch_bytes.average());
    state.counters[counters::kRecordsPerBatch] = counters::Value(s.batch_records.average());
    state.counters[counters::kRatio] = counters::Value(
        s.txmsg_bytes > 0 ? s.batch_bytes.sum / static_cast<double>(s.txmsg_bytes) : 0.0);
    state.counters[counters::kErrors] = counters::Value(static_cast<double>(errors));
    state.counters[counters::kRetries] = counters::Value(static_cast<double>(retries));
    ReportStages(state, s);
    ReportRequests(state, s);
  }

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

// The reference: what a user's own loop does, with nothing of kbench's driver in it. In a
// window it produces until the window's deadline (checking the clock every 64 records, when
// it polls) and counts the delivery reports served before it; the flush comes after.
class BareProducevWork {
 public:
  static StatusOr<std::unique_ptr<BareProducevWork>> Create(const ProduceParams& p) {
    StatusOr<std::unique_ptr<BenchCluster>> cluster = ProduceSetup::CreateCluster(p);
    if (!cluster) return cluster.status();
    std::unique_ptr<BareProducevWork> work(new BareProducevWork(p, std::move(*cluster)));
    if (Status s = work->CreateProducer(); !s) return s;
    return work;
  }
  ~BareProducevWork() {
    if (!rk_) return;  // its factory failed
    if (rd_kafka_outq_len(rk_.get()) > 0) {
      rd_kafka_purge(rk_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      rd_kafka_flush(rk_.get(), 2000);
    }
    rd_kafka_topic_destroy(rkt_);
  }
  BareProducevWork(const BareProducevWork&) = delete;
  BareProducevWork& operator=(const BareProducevWork&) = delete;

  Status Verify() {
    Loop(std::max<std::int64_t>(setup_.warmup(), 1), {});
    Flush();
    if (Status e = TakeError(); !e) return Status::Error("warm-up: " + e.message());
    if (Status e = setup_.CheckEndOffsets(delivered_per_partition_); !e)
      return Status::Error("warm-up: " + e.message());
    return Status::Ok();
  }

  // Windowed: the same load as the window, for warmup_seconds, not measured and not flushed.
  Status BeginRun() {
    if (!setup_.windowed()) return Status::Ok();
    Loop(std::numeric_limits<std::int64_t>::max(),
         Clock::now() + std::chrono::duration_cast<Clock::duration>(setup_.warmup_seconds()));
    window_.Reset();
    boundaries_.clear();
    return Status::Ok();
  }

  void Iterate() {
    if (!setup_.windowed()) {
      Loop(setup_.records_per_iteration(), {});
      Flush();
      return;
    }
    if (window_.Open()) {
      boundaries_.push_back({delivered_, delivered_bytes_});
      next_boundary_ = window_.origin() + window_.interval();
    }
    Loop(std::numeric_limits<std::int64_t>::max(), window_.Next());
  }
  std::int64_t items_per_iteration() const {
    return setup_.windowed() ? 0 : setup_.records_per_iteration();
  }
  std::int64_t bytes_per_iteration() const {
    return setup_.windowed() ? 0 : setup_.AverageValueBytes(setup_.records_per_iteration());
  }
  void Report(benchmark::State& state) {
    if (setup_.windowed()) {
      // Counts as of the window's last poll; the flush (the drain) comes after, untimed.
      const Count begin = boundaries_.empty() ? Count{} : boundaries_.front();
      const Count end = {delivered_, delivered_bytes_};
      Flush();
      state.SetItemsProcessed(end.records - begin.records);
      state.SetBytesProcessed(end.bytes - begin.bytes);
      intervals_ = IntervalSeries{};
      const double width = std::chrono::duration<double>(window_.interval()).count();
      for (std::size_t i = 1; i < boundaries_.size(); ++i) {
        intervals_.seconds.push_back(width);
        intervals_.records_per_second.push_back(
            static_cast<double>(boundaries_[i].records - boundaries_[i - 1].records) / width);
        intervals_.mb_per_second.push_back(
            static_cast<double>(boundaries_[i].bytes - boundaries_[i - 1].bytes) / width /
            (1024.0 * 1024.0));
      }
      state.counters[counters::kIntervalCv] = counters::Value(intervals_.RecordsPerSecondCv());
      state.counters[counters::kWindowSeconds] = counters::Value(window_.seconds());
    }
    Status error = TakeError();
    if (error.ok()) error = setup_.CheckEndOffsets(delivered_per_partition_);
    if (!error.ok()) state.SkipWithError(error.message().c_str());
  }
  const IntervalSeries& intervals() const { return intervals_; }

 private:
  using Clock = WindowSchedule::Clock;
  struct Count {
    std::int64_t records = 0, bytes = 0;
  };

  BareProducevWork(const ProduceParams& p, std::unique_ptr<BenchCluster> cluster)
      : setup_(p, std::move(cluster)), window_(p.run.window_seconds) {}

  // The user's loop's producer, its delivery callback counting into this Work.
  Status CreateProducer() {
    StatusOr<rd_kafka_conf_t*> built = BuildConf(setup_.settings());
    if (!built) return built.status();
    rd_kafka_conf_t* conf = *built;
    rd_kafka_conf_set_opaque(conf, this);
    rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
      auto* self = static_cast<BareProducevWork*>(opaque);
      if (m->err) {
        ++self->failed_;
      } else {
        ++self->delivered_;
        // Counted per partition for the end-offset check, as a careful user would count.
        auto part = static_cast<std::size_t>(m->partition);
        if (part >= self->delivered_per_partition_.size())
          self->delivered_per_partition_.resize(part + 1, 0);
        ++self->delivered_per_partition_[part];
        self->delivered_bytes_ += static_cast<std::int64_t>(m->len);
      }
    });
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
      rd_kafka_conf_destroy(conf);
      return Status::Error(std::string("cannot create producer: ") + err);
    }
    rk_.reset(rk);
    rkt_ = rd_kafka_topic_new(rk, setup_.cluster().topic().c_str(), nullptr);
    return Status::Ok();
  }

  // The loop itself: producev, poll and retry on a full queue, poll now and then; with a
  // deadline, it also ends there and notes the delivered count at each interval boundary.
  void Loop(std::int64_t count, Clock::time_point deadline) {
    rd_kafka_t* rk = rk_.get();
    const RecordSet& records = setup_.records();
    const bool timed = deadline != Clock::time_point{};
    for (std::int64_t i = 0; i < count; ++i) {
      const auto n = static_cast<std::uint64_t>(next_++);
      std::string_view value = records.value(static_cast<std::size_t>(n % records.size()));
      std::string_view key = records.key_at(n);
      for (;;) {
        rd_kafka_resp_err_t err =
            rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt_),
                              RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                              RD_KAFKA_V_KEY(key.empty() ? nullptr : key.data(), key.size()),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          ++produced_;
          break;
        }
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          ++rejected_;
          break;
        }
        rd_kafka_poll(rk, 1);
      }
      if ((i & 63) == 63) {
        rd_kafka_poll(rk, 0);
        if (timed) {
          const auto now = Clock::now();
          if (window_.open() && now >= next_boundary_ && now < deadline + window_.interval()) {
            boundaries_.push_back({delivered_, delivered_bytes_});
            next_boundary_ += window_.interval();
          }
          if (now >= deadline) break;
        }
      }
    }
  }
  void Flush() {
    if (rd_kafka_flush(rk_.get(), 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) flush_timed_out_ = true;
  }
  Status TakeError() {
    Status e;
    if (flush_timed_out_ || delivered_ + failed_ != produced_ || failed_ || rejected_) {
      e = Status::Error(std::to_string(produced_ - delivered_) + " of " +
                        std::to_string(produced_) + " records undelivered (" +
                        std::to_string(failed_) + " failed, " + std::to_string(rejected_) +
                        " rejected)");
    }
    produced_ = delivered_ = failed_ = rejected_ = delivered_bytes_ = 0;
    return e;
  }

  ProduceSetup setup_;
  RdKafkaPtr rk_;
  rd_kafka_topic_t* rkt_ = nullptr;
  WindowSchedule window_;
  Clock::time_point next_boundary_;
  std::vector<Count> boundaries_;  // delivered counts at the window's interval boundaries
  IntervalSeries intervals_;
  std::uint64_t next_ = 0;
  std::int64_t produced_ = 0, delivered_ = 0, failed_ = 0, rejected_ = 0, delivered_bytes_ = 0;
  PartitionCounts delivered_per_partition_;  // over the benchmark's life
  bool flush_timed_out_ = false;
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

// Registers rows in order, except that each bare_producev row runs right next to the send row
// with the same parameters: just before it, or just after it with `references_last` (runs
// alternate it, e.g. scripts/bench on every other process, so neither is always first).
void RegisterPaired(BenchSession& session, const std::vector<ProduceParams>& rows,
                    bool references_last, bool find_max_rate) {
  auto twin_name = [](ProduceParams p) {
    p.variant = "send";
    return Name(p).str();
  };
  auto pairable = [](const ProduceParams& a, const ProduceParams& b) {
    return (a.variant == "send" && b.variant == "bare_producev") ||
           (a.variant == "bare_producev" && b.variant == "send");
  };
  std::vector<bool> done(rows.size(), false);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (done[i]) continue;
    done[i] = true;
    // The other member of this row's pair, if it is among the rows.
    std::size_t twin = rows.size();
    for (std::size_t j = i + 1; j < rows.size() && twin == rows.size(); ++j) {
      if (!done[j] && pairable(rows[i], rows[j]) && twin_name(rows[j]) == twin_name(rows[i])) {
        twin = j;
      }
    }
    if (twin == rows.size()) {
      Register(session, rows[i], find_max_rate);
      continue;
    }
    done[twin] = true;
    const ProduceParams& bare = rows[i].variant == "bare_producev" ? rows[i] : rows[twin];
    const ProduceParams& send = rows[i].variant == "bare_producev" ? rows[twin] : rows[i];
    Register(session, references_last ? send : bare, find_max_rate);
    Register(session, references_last ? bare : send, find_max_rate);
  }
}

// ------------------------------------------------------------------ --produce

// Applies one key=value to the params through its axis.
void ApplyProduceSetting(ProduceParams& p, std::string_view key, std::string_view value) {
  FindAxis("--produce", ProduceAxes(), key).parse(p, key, value);
}

// Expands one --produce spec into every combination of its alternatives, in the order given.
std::vector<ProduceParams> ExpandProduceSpec(std::string_view spec, const ProduceParams& base) {
  std::vector<ProduceParams> rows = ExpandMatrixSpec("--produce", spec, base, ApplyProduceSetting);
  for (ProduceParams& p : rows) {
    if (p.producers == kProducersPerThread) p.producers = p.threads;
    if (Status s = LibrdkafkaCanWrite(p.codec); !s) {
      throw UsageError("--produce: " + s.message());
    }
    if (p.variant == "bare_producev" && (p.threads != 1 || p.producers != 1 || p.rate != 0)) {
      throw UsageError(
          "--produce: variant=bare_producev is a single-threaded loop with one "
          "producer and no rate");
    }
    if (p.topic_codec != "producer" && p.run.bootstrap.empty()) {
      throw UsageError(
          "--produce: topic_codec needs a live broker (--bootstrap): librdkafka's "
          "mock cluster neither keeps topic configs nor recompresses");
    }
    if (p.transaction_records > 0 && p.acks != "all") {
      throw UsageError(
          "--produce: transaction_records needs acks=all (transactions are "
          "idempotent, and idempotence needs acks=all)");
    }
    if (p.transaction_records > 0 && p.producers != p.threads) {
      throw UsageError(
          "--produce: transaction_records needs a producer per thread "
          "(producers=per_thread): a transaction belongs to one producer");
    }
    if (p.transaction_records > 0 && p.variant == "bare_producev") {
      throw UsageError("--produce: variant=bare_producev has no transactions");
    }
    if (p.variant == "max_rate" && p.rate != 0) {
      throw UsageError("--produce: variant=max_rate searches the rate itself: drop rate=");
    }
    if (p.producers > p.threads) {
      throw UsageError("--produce: producers (" + std::to_string(p.producers) +
                       ") cannot exceed threads (" + std::to_string(p.threads) + ")");
    }
  }
  return rows;
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

// bare_producev: librdkafka's produce loop without kbench's driver.
constexpr FamilyReference kProduceReferences[] = {
    {"bare_producev", "send", "send / bare_producev"}};
KBENCH_REGISTER_FAMILY(Produce, RegisterProduceFamily, FamilyTarget::kCluster, ProduceKeys,
                       kProduceReferences);

}  // namespace kbench::bench
