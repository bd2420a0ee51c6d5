// The Produce family's --produce keys: the axis table (parse, name, settings, default of
// each key), the whole-row checks and the default rows. Nothing here is timed; what is
// verified is the user's input, before anything runs (UsageError, exit 2).

#include "benchmarks/produce_params.h"

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "fixtures/cluster.h"
#include "harness/librdkafka_api.h"
#include "harness/status.h"

namespace kbench::bench::produce {
namespace {

constexpr int kProducersPerThread = -1;  // producers=per_thread, resolved after expansion

int ParseInt(std::string_view key, std::string_view text, long long min, long long max) {
  return ParseSpecInt(ProduceParams::kFlag, key, text, min, max);
}
template <std::size_t N>
std::string_view OneOf(std::string_view key, std::string_view value,
                       const std::array<std::string_view, N>& choices) {
  return ParseSpecChoice(ProduceParams::kFlag, key, value, choices);
}

// Values that become part of the name are string_views into these static strings.
constexpr std::array<std::string_view, 3> kAcks = {"0", "1", "all"};
constexpr std::array<std::string_view, 3> kVariants = {"send", "bare_producev", "max_rate"};
// Kafka's compression.type values for a topic: keep the producer's batches, none, or one of
// Kafka's codecs (the codec table's rows with a compression code).
const std::vector<std::string_view>& TopicCodecs() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out = {"producer", "uncompressed"};
    for (const CodecSpec& c : KafkaCodecs()) {
      if (!c.is_none()) out.push_back(c.info().name);
    }
    return out;
  }();
  return names;
}

// The topic_codec key's help: its values, from TopicCodecs().
std::string_view TopicCodecHelp() {
  static const std::string help = [] {
    std::string values;
    for (std::size_t i = 1; i < TopicCodecs().size(); ++i) {
      values += (i > 1 ? ", " : "") + std::string(TopicCodecs()[i]);
    }
    return "the topic's compression.type: producer (keep the batches) or " + values +
           ", which the broker recompresses into (KAFKA-15418; live only)";
  }();
  return help;
}

// --codec is shared with the Codec family, whose levels go further (zstd 19, lz4 -1), so
// codecs librdkafka cannot write are skipped here with a note rather than failing a run
// that may not even select Produce.
CodecSpec ProduceCodec(CodecSpec c) {
  if (Status s = LibrdkafkaCanWrite(c); !s) throw UsageError(s.message());
  return c;
}

// One row per --produce key, in the order keys appear in names and settings
// (fixtures/matrix_spec.h). Adding a key that is one librdkafka setting: a SettingAxis row
// here. Any other key: a ProduceParams field and a row here, plus its driver support where
// the driver must do something new.
using ProduceAxis = AxisRow<ProduceParams>;

const std::vector<ProduceAxis>& ProduceAxes() {
  static const std::vector<ProduceAxis> axes = {
      {"acks", "0, 1 or all (default {})",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         p.acks = OneOf(k, v == "-1" ? "all" : v, kAcks);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) { n.Add(k, p.acks); },
       [](const ProduceParams& p, ClientSettings& s) { s.emplace_back("acks", p.acks); },
       AxisValue<&ProduceParams::acks>},
      {"codec", "a codec librdkafka writes, optionally :LEVEL (default {})",
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
       },
       AxisValue<&ProduceParams::codec>},
      // Checked against the codec's librdkafka range once the row is complete.
      {"level", "compression level, within the codec's librdkafka range (default: its own)",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         p.codec.level = ParseInt(k, v, -100, 100);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.codec.level != 0) n.Add(k, p.codec.level);
       },
       nullptr},
      {"record_bytes", "value size, fixed (100) or a range (250-750) (default {})",
       [](ProduceParams& p, std::string_view, std::string_view v) {
         p.record_bytes = ParseSizeSpec(v);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         n.Add(k, p.record_bytes.Name());
       },
       nullptr, AxisValue<&ProduceParams::record_bytes>},
      {"threads", "application threads producing (default {})",
       ParseIntAxis<&ProduceParams::threads, 1, 256>, NameAlways<&ProduceParams::threads>, nullptr,
       AxisValue<&ProduceParams::threads>},
      {"producers", "producer instances the threads share round-robin, or per_thread (default {})",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         // per_thread: as many as threads, whichever order the keys come in (see expansion).
         p.producers = v == "per_thread" ? kProducersPerThread : ParseInt(k, v, 1, 256);
       },
       NameAlways<&ProduceParams::producers>, nullptr, AxisValue<&ProduceParams::producers>},
      {"payload", "a --payload kind (default {})",
       [](ProduceParams& p, std::string_view, std::string_view v) {
         p.payload = ParsePayloadSpec(v);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.payload.Name() != ProduceParams{}.payload.Name()) n.Add(k, p.payload.Name());
         if (p.records.cycles()) n.Add("repeats", "allowed");
       },
       nullptr, AxisValue<&ProduceParams::payload>},
      SettingAxis<ProduceParams, "linger_ms", "linger.ms", 5, 0, 900000>("linger.ms (default {})"),
      {"batch_bytes", "batch.size (default {})",
       ParseIntAxis<&ProduceParams::batch_bytes, 1, 2147483647>,
       NameIfChanged<&ProduceParams::batch_bytes>,
       [](const ProduceParams& p, ClientSettings& s) {
         s.emplace_back("batch.size", std::to_string(p.batch_bytes));
       },
       AxisValue<&ProduceParams::batch_bytes>},
      {"partitions", "partitions of the topic (default {})",
       ParseIntAxis<&ProduceParams::partitions, 1, 10000>,
       NameIfChanged<&ProduceParams::partitions>, nullptr, AxisValue<&ProduceParams::partitions>},
      {"replication", "replication factor of the topic (default {})",
       ParseIntAxis<&ProduceParams::replication, 1, 32>, NameIfChanged<&ProduceParams::replication>,
       nullptr, AxisValue<&ProduceParams::replication>},
      SettingAxis<ProduceParams, "max_in_flight", "max.in.flight.requests.per.connection", 5, 1,
                  1000000>("max.in.flight.requests.per.connection (default {})"),
      {"idempotence", "enable.idempotence, true or false (default {})",
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
       },
       AxisValue<&ProduceParams::idempotence>},
      {"keys",
       "none, uniform or zipf (0.99) over key_count keys, via the default partitioner "
       "(default {}: null keys)",
       [](ProduceParams& p, std::string_view, std::string_view v) {
         p.keys.distribution = ParseKeyDistribution(v);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.keys.distribution != KeyDistribution::kNone) n.Add(k, p.keys.Name());
       },
       nullptr, AxisValue<&ProduceParams::keys>},
      {"key_count", "distinct keys when keys is uniform or zipf (default {})",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         p.keys.count =
             static_cast<std::size_t>(ParseInt(k, v, 1, static_cast<long long>(kMaxDistinctKeys)));
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.keys.distribution != KeyDistribution::kNone) n.Add(k, p.keys.count);
       },
       nullptr, [](const ProduceParams& p) { return AxisText(p.keys.count); }},
      {"topic_codec", TopicCodecHelp(),
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         const auto& names = TopicCodecs();
         p.topic_codec = ParseSpecChoice(ProduceParams::kFlag, k, v, names.data(), names.size());
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.topic_codec != "producer") n.Add(k, p.topic_codec);
       },
       nullptr, AxisValue<&ProduceParams::topic_codec>},
      {"transaction_records",
       "transactional producers, one per thread, committing every N records (acks=all; "
       "default {}: none)",
       ParseIntAxis<&ProduceParams::transaction_records, 0, 100000000>,
       NameIfChanged<&ProduceParams::transaction_records>, nullptr,
       AxisValue<&ProduceParams::transaction_records>},
      {"warmup",
       "records produced before measuring (default: 10 % of an iteration; a paced windowed row: at "
       "most a quarter second of its rate)",
       ParseIntAxis<&ProduceParams::warmup, 0, 2000000000>, NameIfChanged<&ProduceParams::warmup>,
       nullptr},
      {"rate", "offered load in records/s, open loop (default {}: unthrottled)",
       ParseIntAxis<&ProduceParams::rate, 0, 2000000000>, NameIfChanged<&ProduceParams::rate>,
       nullptr, AxisValue<&ProduceParams::rate>},
      {"settings",
       "same (pinned settings: what the code costs) or shipped (linger.ms, batch.size, "
       "max.in.flight and Nagle at the loaded release's defaults: what an upgrade brings) "
       "(default: same)",
       [](ProduceParams& p, std::string_view, std::string_view v) {
         p.lens = ParseSettingsLens(ProduceParams::kFlag, v);
       },
       [](const ProduceParams& p, std::string_view k, BenchName& n) {
         if (p.lens != SettingsLens::kSame) n.Add(k, LensName(p.lens));
       },
       nullptr},
      // The variant is the name's second component (Produce/VARIANT/...), not a key:value.
      {"variant", "send, bare_producev (the reference loop) or max_rate (default {})",
       [](ProduceParams& p, std::string_view k, std::string_view v) {
         p.variant = OneOf(k, v, kVariants);
       },
       nullptr, nullptr, AxisValue<&ProduceParams::variant>},
  };
  return axes;
}

// Applies one key=value to the params through its axis.
void ApplyProduceSetting(ProduceParams& p, std::string_view key, std::string_view value) {
  FindAxis(ProduceParams::kFlag, ProduceAxes(), key).parse(p, key, value);
}

// The feature of the loaded librdkafka a row needs and lacks, as the reason it is not run.
std::string NotRunReason(const ProduceParams& p) {
  if (p.transaction_records > 0 && !HasFeature(Feature::kTransactions)) {
    return LacksFeature(Feature::kTransactions);
  }
  return MockNotRunReason(p.run, p.codec);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> TopicConfigs(const ProduceParams& p) {
  if (p.topic_codec == "producer") return {};
  return {{"compression.type", std::string(p.topic_codec)}};
}

ClientSettings BenchmarkSettings(const ProduceParams& p) {
  ClientSettings s = AxisSettings(ProduceAxes(), p);
  ApplySettingsLens(p.lens, p.record_bytes.mean(), s);
  return s;
}

std::string SettingsNote(const ProduceParams& p) {
  ClientSettings s = AxisSettings(ProduceAxes(), p);
  return ApplySettingsLens(p.lens, p.record_bytes.mean(), s);
}

BenchName Name(const ProduceParams& p) {
  BenchName name("Produce", p.variant);
  AddAxisNames(ProduceAxes(), p, name);
  return name;
}

FamilyKeys ProduceKeys() { return AxisKeys(ProduceParams::kFlag, ProduceAxes()); }

// ------------------------------------------------------------------ default rows

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

// ------------------------------------------------------------------ --produce

std::vector<ProduceParams> ExpandProduceSpec(std::string_view spec, const ProduceParams& base) {
  std::vector<ProduceParams> rows =
      ExpandMatrixSpec(ProduceParams::kFlag, spec, base, ApplyProduceSetting);
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
    if (p.lens == SettingsLens::kShipped &&
        (p.settings.Get("linger_ms", -1) != -1 || p.settings.Get("max_in_flight", -1) != -1 ||
         p.batch_bytes != ProduceParams{}.batch_bytes)) {
      throw UsageError(
          "--produce: settings=shipped leaves linger.ms, batch.size and max.in.flight to "
          "the release: drop linger_ms, batch_bytes and max_in_flight (or use settings=same)");
    }
    p.not_run = NotRunReason(p);
  }
  return rows;
}

}  // namespace kbench::bench::produce
