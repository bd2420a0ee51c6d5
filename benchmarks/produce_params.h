#pragma once

// The Produce family's row parameters (benchmarks/produce_bench.cc runs them): what a row
// is, its --produce keys (one axis-table row each, fixtures/matrix_spec.h), its name, its
// client settings and topic configs, the checks a row must pass before anything runs, and
// the rows that run without --produce. Nothing here is timed or touches a cluster.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fixtures/bench_name.h"
#include "fixtures/family.h"
#include "fixtures/matrix_spec.h"
#include "fixtures/options.h"
#include "fixtures/settings_lens.h"
#include "harness/codec.h"
#include "harness/payload.h"

namespace kbench::bench::produce {

// kbench's defaults, set explicitly so results do not depend on the librdkafka version's
// own defaults (linger.ms changed from 0.5 to 5 in 1.5.0). A parameter appears in the name
// only when it differs from these; --describe and --help print them (AxisKeys).
struct ProduceParams {
  static constexpr std::string_view kFlag = "--produce";
  std::string_view variant = "send";
  std::string_view acks = "all";  // static strings only (produce_params.cc's constants)
  CodecSpec codec{};
  SizeSpec record_bytes{100, 100};
  PayloadSpec payload{};  // az, what kafka-producer-perf-test sends
  int batch_bytes = 1000000;
  int partitions = 2;
  int replication = 1;
  bool idempotence = false;
  int threads = 1;
  int producers = 1;
  std::int64_t warmup = -1;              // records; -1 = ProduceSetup::warmup()'s default
  std::int64_t rate = 0;                 // records/s overall; 0 = unthrottled
  KeySpec keys{};                        // none: the payload's keys (null for all but `repeated`)
  std::int64_t transaction_records = 0;  // > 0: transactional, a commit every N per thread
  std::string_view topic_codec = "producer";  // the topic's compression.type
  std::uint64_t seed = kDefaultPayloadSeed;
  SettingValues settings;  // the setting axes' values (linger_ms, max_in_flight, ...)
  SettingsLens lens = SettingsLens::kSame;  // fixtures/settings_lens.h
  ClusterRun run;  // the command line's cluster, settings, window; not in the name
  // The records cycled through, planned at registration (PlanSendRecords) from the above.
  SendRecordsPlan records{};
  // Why the loaded librdkafka cannot run this row ("" if it can): the row is registered,
  // so that its name stays in every result, and reported as not run (fixtures/runner.h).
  std::string not_run;
};

// Produce/VARIANT/key:value/..., each axis adding itself when its row says so.
BenchName Name(const ProduceParams& p);
// The benchmark's own client settings, from the axes that map to settings, as its lens and
// the loaded librdkafka take them (fixtures/settings_lens.h).
ClientSettings BenchmarkSettings(const ProduceParams& p);
// What the lens or the loaded librdkafka changed of those settings, for the row's label.
std::string SettingsNote(const ProduceParams& p);
// The topic's configs (compression.type only when it is not the broker's default).
std::vector<std::pair<std::string, std::string>> TopicConfigs(const ProduceParams& p);
// For --help and --describe: one entry per key, with its default.
FamilyKeys ProduceKeys();

// Every combination of one --produce spec's alternatives applied to `base`, in the order
// given, each checked as a whole row (UsageError, exit 2, on one that cannot run).
std::vector<ProduceParams> ExpandProduceSpec(std::string_view spec, const ProduceParams& base);

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
const std::vector<DefaultRows>& ProduceDefaultRows();

}  // namespace kbench::bench::produce
