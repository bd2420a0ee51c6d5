#include "harness/payload.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "harness/status.h"

namespace kbench {
namespace {

// SplitMix64: tiny, fast, and specified exactly, so payloads are identical on every
// platform and standard library.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound): modulo of a 64-bit draw; the bias (< bound / 2^64) is irrelevant
  // for payload bytes.
  std::uint64_t Below(std::uint64_t bound) { return Next() % bound; }

 private:
  std::uint64_t state_;
};

constexpr std::array<std::string_view, 6> kKinds = {"zeros",         "random",   "az",
                                                    "value_bound:N", "repeated", "file:PATH"};
// `repeated`: this many distinct bodies, reused with random keys (seed 000's variant).
constexpr std::size_t kRepeatedBodies = 8;
constexpr std::size_t kRepeatedKeyBytes = 16;
// Upper bound on a single record: keeps a typo ("1000000000") from exhausting memory.
constexpr std::size_t kMaxRecordBytes = 64u << 20;

std::string KindList() {
  std::string s;
  for (auto k : kKinds) {
    if (!s.empty()) s += ", ";
    s += k;
  }
  return s;
}

std::uint64_t ParseUnsigned(std::string_view text, std::string_view what) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    throw UsageError(std::string(what) + " '" + std::string(text) +
                     "' is not a non-negative integer");
  }
  return v;
}

void FillValue(PayloadKind kind, std::uint64_t value_bound, Rng& rng, char* out, std::size_t n) {
  switch (kind) {
    case PayloadKind::kZeros:
      std::fill_n(out, n, '\0');
      return;
    case PayloadKind::kRandom: {
      std::size_t i = 0;
      for (; i + 8 <= n; i += 8) {
        std::uint64_t r = rng.Next();
        std::memcpy(out + i, &r, 8);
      }
      if (i < n) {
        std::uint64_t r = rng.Next();
        std::memcpy(out + i, &r, n - i);
      }
      return;
    }
    case PayloadKind::kAz:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<char>('A' + rng.Below(26));
      return;
    case PayloadKind::kValueBound: {
      // Space-separated decimal integers drawn from [0, bound): a small bound repeats
      // tokens often and compresses well, a large one does not (KAFKA-3565's knob).
      std::size_t i = 0;
      char digits[24];
      while (i < n) {
        auto [end, ec] = std::to_chars(digits, digits + sizeof digits, rng.Below(value_bound));
        std::size_t len = static_cast<std::size_t>(end - digits);
        std::size_t take = std::min(len, n - i);
        std::memcpy(out + i, digits, take);
        i += take;
        if (i < n) out[i++] = ' ';
      }
      return;
    }
    case PayloadKind::kRepeated:
    case PayloadKind::kFile:
      return;  // handled by the caller
  }
}

std::vector<std::string> ReadFileRecords(const PayloadSpec& spec) {
  std::ifstream in(spec.file_path, std::ios::binary);
  if (!in) throw UsageError("cannot read payload file '" + spec.file_path + "'");
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string all = buf.str();
  std::vector<std::string> records;
  std::size_t start = 0;
  while (start <= all.size()) {
    std::size_t end = all.find(spec.file_delimiter, start);
    if (end == std::string::npos) end = all.size();
    if (end > start) records.emplace_back(all.substr(start, end - start));
    start = end + 1;
  }
  if (records.empty()) throw UsageError("payload file '" + spec.file_path + "' holds no records");
  return records;
}

// The same refusals as ReadFileRecords, reading only up to the first record's first byte:
// option parsing should not read a large corpus that Build reads again.
void CheckFileHasRecords(const PayloadSpec& spec) {
  std::ifstream in(spec.file_path, std::ios::binary);
  if (!in) throw UsageError("cannot read payload file '" + spec.file_path + "'");
  for (char c; in.get(c);) {
    if (c != spec.file_delimiter) return;
  }
  throw UsageError("payload file '" + spec.file_path + "' holds no records");
}

}  // namespace

std::string PayloadSpec::Name() const {
  switch (kind) {
    case PayloadKind::kZeros:
      return "zeros";
    case PayloadKind::kRandom:
      return "random";
    case PayloadKind::kAz:
      return "az";
    case PayloadKind::kValueBound:
      return "value_bound:" + std::to_string(value_bound);
    case PayloadKind::kRepeated:
      return "repeated";
    case PayloadKind::kFile: {
      auto slash = file_path.find_last_of('/');
      return "file:" + (slash == std::string::npos ? file_path : file_path.substr(slash + 1));
    }
  }
  return "unknown";
}

std::string SizeSpec::Name() const {
  return fixed() ? std::to_string(min) : std::to_string(min) + "-" + std::to_string(max);
}

const std::vector<std::string_view>& KnownPayloadKinds() {
  static const std::vector<std::string_view> kinds(kKinds.begin(), kKinds.end());
  return kinds;
}

PayloadSpec ParsePayloadSpec(std::string_view text) {
  PayloadSpec spec;
  if (text == "zeros") {
    spec.kind = PayloadKind::kZeros;
  } else if (text == "random") {
    spec.kind = PayloadKind::kRandom;
  } else if (text == "az") {
    spec.kind = PayloadKind::kAz;
  } else if (text == "repeated") {
    spec.kind = PayloadKind::kRepeated;
  } else if (text.starts_with("value_bound:")) {
    spec.kind = PayloadKind::kValueBound;
    spec.value_bound = ParseUnsigned(text.substr(12), "value_bound");
    if (spec.value_bound < 1) throw UsageError("value_bound must be at least 1");
  } else if (text.starts_with("file:")) {
    spec.kind = PayloadKind::kFile;
    spec.file_path = std::string(text.substr(5));
    if (spec.file_path.empty()) throw UsageError("file: needs a path, e.g. file:/data/records.txt");
    CheckFileHasRecords(spec);  // refused now, before anything runs
  } else {
    throw UsageError("unknown payload '" + std::string(text) + "': valid payloads are " +
                     KindList());
  }
  return spec;
}

SizeSpec ParseSizeSpec(std::string_view text) {
  SizeSpec s;
  try {
    if (auto dash = text.find('-'); dash != std::string_view::npos) {
      s.min = ParseUnsigned(text.substr(0, dash), "record size");
      s.max = ParseUnsigned(text.substr(dash + 1), "record size");
    } else {
      s.min = s.max = ParseUnsigned(text, "record size");
    }
  } catch (const UsageError&) {
    throw UsageError("record size '" + std::string(text) +
                     "' is neither a size in bytes (100) nor a range (250-750)");
  }
  if (s.min > s.max) throw UsageError("record size range '" + std::string(text) + "' is reversed");
  // An empty value has nothing to compress or send: every per-byte figure would divide by 0.
  if (s.min == 0) {
    throw UsageError("record size '" + std::string(text) + "' includes 0: sizes start at 1 byte");
  }
  if (s.max > kMaxRecordBytes) {
    throw UsageError("record size " + std::to_string(s.max) + " exceeds the limit of " +
                     std::to_string(kMaxRecordBytes) + " bytes");
  }
  return s;
}

ByteBuffer RecordSet::ConcatenatedValues() const {
  ByteBuffer out(total_value_bytes_);
  for (auto v : values_) out.Append(v);
  return out;
}

PayloadGenerator::PayloadGenerator(PayloadSpec spec, SizeSpec sizes, std::uint64_t seed)
    : spec_(std::move(spec)), sizes_(sizes), seed_(seed) {}

std::string_view KeySpec::Name() const {
  switch (distribution) {
    case KeyDistribution::kUniform:
      return "uniform";
    case KeyDistribution::kZipf:
      return "zipf";
    case KeyDistribution::kNone:
      break;
  }
  return "none";
}

KeyDistribution ParseKeyDistribution(std::string_view text) {
  if (text == "none") return KeyDistribution::kNone;
  if (text == "uniform") return KeyDistribution::kUniform;
  if (text == "zipf") return KeyDistribution::kZipf;
  throw UsageError("keys must be none, uniform or zipf, not '" + std::string(text) + "'");
}

void RecordSet::DrawKeys(const KeySpec& spec, std::uint64_t seed) {
  if (spec.distribution == KeyDistribution::kNone) return;
  if (spec.count == 0 || spec.count > kMaxDistinctKeys) {
    throw UsageError("key count must be in [1, " + std::to_string(kMaxDistinctKeys) + "]");
  }
  const std::size_t width = std::to_string(spec.count - 1).size() + 1;
  key_arena_.assign(spec.count * width, '0');
  for (std::size_t k = 0; k < spec.count; ++k) {
    char* key = key_arena_.data() + k * width;
    key[0] = 'k';
    const std::string digits = std::to_string(k);
    std::copy(digits.begin(), digits.end(), key + width - digits.size());
  }
  // Zipf by inverse transform over the cumulative weights (a binary search per draw), with
  // kbench's own generator rather than <random>'s distributions, whose output differs
  // between standard libraries.
  std::vector<double> cumulative;
  if (spec.distribution == KeyDistribution::kZipf) {
    cumulative.resize(spec.count);
    double sum = 0;
    for (std::size_t k = 0; k < spec.count; ++k) {
      sum += 1.0 / std::pow(static_cast<double>(k + 1), spec.exponent);
      cumulative[k] = sum;
    }
  }
  Rng rng(seed ^ 0x6b657973ull);  // "keys": a stream apart from the payload's
  const std::size_t length = std::max(size(), kMinKeySequence);
  keys_.clear();
  keys_.reserve(length);
  total_key_bytes_ = 0;
  for (std::size_t i = 0; i < length; ++i) {
    std::size_t k;
    if (spec.distribution == KeyDistribution::kUniform) {
      k = static_cast<std::size_t>(rng.Below(spec.count));
    } else {
      const double u = static_cast<double>(rng.Next() >> 11) * 0x1.0p-53 * cumulative.back();
      k = static_cast<std::size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u) -
                                   cumulative.begin());
      k = std::min(k, spec.count - 1);
    }
    keys_.emplace_back(key_arena_.data() + k * width, width);
    if (i < size()) total_key_bytes_ += width;
  }
}

RecordSet PayloadGenerator::Generate(std::size_t count) const {
  return Build(count, static_cast<std::size_t>(-1));
}

RecordSet PayloadGenerator::GenerateUpTo(std::size_t max_total_value_bytes) const {
  return Build(static_cast<std::size_t>(-1), max_total_value_bytes);
}

RecordSet PayloadGenerator::GenerateCorpus(std::size_t max_total_value_bytes) const {
  if (spec_.kind != PayloadKind::kFile) return GenerateUpTo(max_total_value_bytes);
  return Build(static_cast<std::size_t>(-1), static_cast<std::size_t>(-1), true);
}

RecordSet PayloadGenerator::GenerateSendRecords(const SendRecordsPlan& plan) const {
  if (spec_.kind == PayloadKind::kFile) {
    return Build(static_cast<std::size_t>(-1), static_cast<std::size_t>(-1), true);
  }
  // GenerateUpTo stops short of its budget by less than one record: one record more of
  // budget makes it reach plan.generate.
  return GenerateUpTo(plan.generate + sizes_.max);
}

std::size_t SendPathDistinctBytes(const SendShape& shape) {
  constexpr std::size_t kMax = static_cast<std::size_t>(-1);
  auto times = [](std::size_t a, std::size_t b) { return b != 0 && a > kMax / b ? kMax : a * b; };
  return std::max(
      times(times(shape.batch_bytes, shape.partitions), std::max<std::size_t>(shape.producers, 1)),
      kMinDistinctSendBytes);
}

std::uint64_t FileValueBytes(const PayloadSpec& spec) {
  std::ifstream in(spec.file_path, std::ios::binary);
  if (!in) throw UsageError("cannot read payload file '" + spec.file_path + "'");
  std::vector<char> buf(std::size_t{1} << 20);
  std::uint64_t bytes = 0;
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    const auto got = static_cast<std::size_t>(in.gcount());
    bytes += got - static_cast<std::size_t>(
                       std::count(buf.data(), buf.data() + got, spec.file_delimiter));
  }
  return bytes;
}

std::uint64_t FileValueBytesCache::Get(const PayloadSpec& spec) {
  auto key = std::make_pair(spec.file_path, spec.file_delimiter);
  if (auto it = known_.find(key); it != known_.end()) return it->second;
  const std::uint64_t bytes = FileValueBytes(spec);
  known_.emplace(std::move(key), bytes);
  return bytes;
}

SendRecordsPlan PlanSendRecords(const PayloadSpec& payload, const SendShape& shape,
                                bool allow_repeats, FileValueBytesCache& files) {
  SendRecordsPlan plan;
  plan.needed = SendPathDistinctBytes(shape);
  const std::string need =
      std::to_string(plan.needed) + " bytes of distinct values (max(batch_bytes " +
      std::to_string(shape.batch_bytes) + " x partitions " + std::to_string(shape.partitions) +
      " x producers " + std::to_string(shape.producers) + ", " +
      std::to_string(kMinDistinctSendBytes) + ")) so that no batch sees a record twice";
  if (payload.kind == PayloadKind::kFile) {
    plan.file_bytes = files.Get(payload);
    plan.repeats = plan.file_bytes < plan.needed;
    if (plan.repeats && !allow_repeats) {
      plan.refusal = "payload " + payload.Name() + " holds " + std::to_string(plan.file_bytes) +
                     " bytes of values; the send path needs " + need +
                     ": give a larger file, or --allow-repeats to cycle it (rows then say "
                     "repeats:allowed)";
    }
  } else {
    plan.generate = std::min(plan.needed, kMaxDistinctSendBytes);
    plan.repeats = plan.needed > kMaxDistinctSendBytes;
    if (plan.repeats && !allow_repeats) {
      plan.refusal = "payload " + payload.Name() + ": the send path needs " + need +
                     ", more than the " + std::to_string(kMaxDistinctSendBytes) +
                     " kbench generates: lower batch_bytes, partitions or producers, or "
                     "--allow-repeats to cycle " +
                     std::to_string(kMaxDistinctSendBytes) + " (rows then say repeats:allowed)";
    }
  }
  return plan;
}

RecordSet PayloadGenerator::Build(std::size_t max_count, std::size_t max_bytes,
                                  bool whole_file) const {
  Rng rng(seed_);
  std::vector<std::string> file_records;
  if (spec_.kind == PayloadKind::kFile) file_records = ReadFileRecords(spec_);
  if (whole_file) max_count = file_records.size();

  std::vector<std::string> bodies;
  if (spec_.kind == PayloadKind::kRepeated) {
    for (std::size_t b = 0; b < kRepeatedBodies; ++b) {
      std::string body(sizes_.max, '\0');
      FillValue(PayloadKind::kAz, 0, rng, body.data(), body.size());
      bodies.push_back(std::move(body));
    }
  }

  // Sizes first, so the arena is allocated once and views stay valid.
  std::vector<std::size_t> value_sizes;
  std::size_t total = 0;
  // A byte budget of empty records would never fill up: bound the count as well.
  std::size_t limit =
      max_bytes == static_cast<std::size_t>(-1) ? max_count : std::min(max_count, max_bytes + 1);
  for (std::size_t i = 0; i < limit; ++i) {
    std::size_t n = spec_.kind == PayloadKind::kFile
                        ? file_records[i % file_records.size()].size()
                        : sizes_.min + rng.Below(sizes_.max - sizes_.min + 1);
    if (!value_sizes.empty() && total + n > max_bytes) break;
    value_sizes.push_back(n);
    total += n;
    if (total >= max_bytes) break;
  }
  std::size_t key_bytes = spec_.kind == PayloadKind::kRepeated ? kRepeatedKeyBytes : 0;

  RecordSet set;
  set.arena_.resize(total + key_bytes * value_sizes.size());
  char* p = set.arena_.data();
  for (std::size_t i = 0; i < value_sizes.size(); ++i) {
    std::size_t n = value_sizes[i];
    switch (spec_.kind) {
      case PayloadKind::kFile:
        std::memcpy(p, file_records[i % file_records.size()].data(), n);
        break;
      case PayloadKind::kRepeated:
        std::memcpy(p, bodies[rng.Below(bodies.size())].data(), n);
        break;
      default:
        FillValue(spec_.kind, spec_.value_bound, rng, p, n);
    }
    set.values_.emplace_back(p, n);
    p += n;
    if (key_bytes) {
      FillValue(PayloadKind::kAz, 0, rng, p, key_bytes);
      set.keys_.emplace_back(p, key_bytes);
      p += key_bytes;
    }
  }
  set.total_value_bytes_ = total;
  set.total_key_bytes_ = key_bytes * value_sizes.size();
  return set;
}

}  // namespace kbench
