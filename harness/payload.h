#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/bytes.h"

namespace kbench {

enum class PayloadKind { kZeros, kRandom, kAz, kValueBound, kRepeated, kFile };

// What records look like. Parsed from text such as "az", "value_bound:5000",
// "file:/path/to/records.txt".
struct PayloadSpec {
  PayloadKind kind = PayloadKind::kAz;
  std::uint64_t value_bound = 0;  // kValueBound: integers drawn from [0, value_bound)
  std::string file_path;          // kFile
  char file_delimiter = '\n';     // kFile

  // Stable text used in benchmark names: zeros, random, az, value_bound:500, repeated,
  // file:<basename>.
  std::string Name() const;
};

// Record sizes: fixed ("100") or a uniform range ("250-750"), in bytes of value.
struct SizeSpec {
  std::size_t min = 100;
  std::size_t max = 100;
  bool fixed() const { return min == max; }
  double mean() const { return (static_cast<double>(min) + static_cast<double>(max)) / 2; }
  std::string Name() const;  // "100" or "250-750"
};

// Throw UsageError listing valid kinds / the accepted syntax.
PayloadSpec ParsePayloadSpec(std::string_view text);
SizeSpec ParseSizeSpec(std::string_view text);
const std::vector<std::string_view>& KnownPayloadKinds();

// Record keys, drawn per record sent: none (null keys, or the payload's own: `repeated`),
// uniform over `count` distinct keys, or zipf-skewed over `count` (the key of rank k drawn
// with weight 1/k^exponent, YCSB's 0.99). Null keys make producer benchmarks optimistic
// (KIP-1299): librdkafka's sticky partitioner then fills one partition's batch at a time,
// while keyed records spread over every partition the partitioner hashes them to.
enum class KeyDistribution { kNone, kUniform, kZipf };
struct KeySpec {
  KeyDistribution distribution = KeyDistribution::kNone;
  std::size_t count = 1000;
  double exponent = 0.99;
  std::string_view Name() const;  // none, uniform, zipf
};
// "none", "uniform" or "zipf"; UsageError otherwise.
KeyDistribution ParseKeyDistribution(std::string_view text);
inline constexpr std::size_t kMaxDistinctKeys = 1000000;

// A set of records stored contiguously: values (and keys, where the kind has them) are
// views into one arena so timed loops walk memory the way a batch builder would.
class RecordSet {
 public:
  std::size_t size() const { return values_.size(); }
  std::string_view value(std::size_t i) const { return values_[i]; }
  // Empty view = no key (null key on the wire).
  std::string_view key(std::size_t i) const {
    return keys_.empty() ? std::string_view() : keys_[i];
  }
  bool has_keys() const { return !keys_.empty(); }
  // The key of the n-th record sent (n counts on past size(): drawn keys cycle with their
  // own period, longer than the set's, so that many distinct keys fit a small set).
  std::string_view key_at(std::uint64_t n) const {
    return keys_.empty() ? std::string_view() : keys_[n % keys_.size()];
  }
  // Replaces the keys with a sequence drawn from `spec` (deterministic per seed) of at least
  // kMinKeySequence entries; kNone leaves the set as it is. Keys are "k" and the key's
  // number, zero-padded to one width.
  void DrawKeys(const KeySpec& spec, std::uint64_t seed);
  static constexpr std::size_t kMinKeySequence = 65536;
  std::size_t total_value_bytes() const { return total_value_bytes_; }
  std::size_t total_key_bytes() const { return total_key_bytes_; }

  // Concatenation of all values: the "batch" the Codec family compresses.
  ByteBuffer ConcatenatedValues() const;

 private:
  friend class PayloadGenerator;
  std::string arena_;
  std::vector<char> key_arena_;  // drawn keys (a vector: its buffer survives a move)
  std::vector<std::string_view> keys_;
  std::vector<std::string_view> values_;
  std::size_t total_value_bytes_ = 0;
  std::size_t total_key_bytes_ = 0;
};

// ------------------------------------------------------------------ the send path's records
//
// Produce and EndToEnd rows cycle through one RecordSet. So that no batch and no codec
// window sees a record twice (it would compress the repeat, not the data), a record comes
// back only after at least
//   max(batch_bytes x partitions x producers, kMinDistinctSendBytes)
// bytes of values: batch_bytes x partitions because keyed records spread over every
// partition's open batch at once; x producers because threads sharing producers interleave
// the set, so each producer instance sees its share; kMinDistinctSendBytes (the Codec
// family's working set) because it exceeds what one batch of librdkafka's defaults holds and
// the core's caches, so records are read as an application sending fresh data reads them.
// (A codec never sees across batches: Kafka compresses each batch on its own.)
inline constexpr std::size_t kMinDistinctSendBytes = std::size_t{16} << 20;
// Generated payloads stop here (memory and generation time); a row that needs more is
// refused unless repeats are allowed.
inline constexpr std::size_t kMaxDistinctSendBytes = std::size_t{4} << 30;

// What a send-path row's records look like: the batch size it asks librdkafka for, the
// topic's partitions and the producer instances sharing the set.
struct SendShape {
  std::size_t batch_bytes = 1000000;
  std::size_t partitions = 1;
  std::size_t producers = 1;
};
// max(batch_bytes x partitions x producers, kMinDistinctSendBytes), saturating.
std::size_t SendPathDistinctBytes(const SendShape& shape);

struct SendRecordsPlan {
  std::size_t needed = 0;        // distinct value bytes the row needs (SendPathDistinctBytes)
  std::size_t generate = 0;      // generated kinds: value bytes to generate (>= needed unless
                                 // capped at kMaxDistinctSendBytes)
  std::uint64_t file_bytes = 0;  // file payloads: the file's value bytes
  bool repeats = false;          // fewer distinct bytes than needed: records come back sooner
  std::string refusal;           // set when it repeats and repeats are not allowed
  // Records come back sooner, as --allow-repeats allowed: the row's name says so.
  bool cycles() const { return repeats && refusal.empty(); }
};
// The value bytes of a file payload: its bytes less the delimiters (reads the whole file).
std::uint64_t FileValueBytes(const PayloadSpec& spec);

// FileValueBytes per path and delimiter, each file read once: rows of one run ask for the
// same file again and again (one per codec, acks, ...). Kept by whoever plans the rows, for
// as long as it plans them (kbench: the run's fixtures/run_state.h).
class FileValueBytesCache {
 public:
  std::uint64_t Get(const PayloadSpec& spec);

 private:
  std::map<std::pair<std::string, char>, std::uint64_t> known_;
};

// The plan of a row's records; `allow_repeats` (--allow-repeats) turns a refusal into a row
// that repeats (its name then says so). File payloads are measured through `files`.
SendRecordsPlan PlanSendRecords(const PayloadSpec& payload, const SendShape& shape,
                                bool allow_repeats, FileValueBytesCache& files);

// Deterministic per (spec, sizes, seed): the same inputs give the same bytes on every
// machine (kbench uses its own PRNG and mapping, not <random>'s distributions, whose
// output differs between standard libraries).
class PayloadGenerator {
 public:
  PayloadGenerator(PayloadSpec spec, SizeSpec sizes, std::uint64_t seed);

  // Exactly `count` records.
  RecordSet Generate(std::size_t count) const;
  // Whole records until adding the next would exceed `max_total_value_bytes`; at least one.
  RecordSet GenerateUpTo(std::size_t max_total_value_bytes) const;
  // A file payload: each of the file's records once, in file order (the whole corpus, as
  // `zstd -b FILE` reads it). Other kinds: GenerateUpTo(max_total_value_bytes).
  RecordSet GenerateCorpus(std::size_t max_total_value_bytes) const;
  // The records a send-path row cycles through (PlanSendRecords): a file payload's records
  // once each, in file order; other kinds whole records of at least plan.generate value bytes.
  RecordSet GenerateSendRecords(const SendRecordsPlan& plan) const;

 private:
  RecordSet Build(std::size_t max_count, std::size_t max_bytes, bool whole_file = false) const;
  PayloadSpec spec_;
  SizeSpec sizes_;
  std::uint64_t seed_;
};

inline constexpr std::uint64_t kDefaultPayloadSeed = 0x6b62656e6368ull;  // "kbench"

}  // namespace kbench
