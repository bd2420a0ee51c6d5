#pragma once

// Seeded random records for the record-format tests. Records own their bytes (the writer
// takes views), so a RecordFixture keeps storage and views together.

#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "harness/bytes.h"
#include "harness/record/reader.h"
#include "harness/record/record.h"
#include "harness/record/writer.h"

namespace kbench::record::testing {

struct RecordFixture {
  std::deque<std::string> storage;  // deque: growth never moves existing strings
  std::vector<std::vector<Header>> headers;
  std::vector<Record> records;

  std::string_view Keep(std::string s) { return storage.emplace_back(std::move(s)); }
};

// Bytes of a given kind: random (incompressible) or a few repeated letters (compressible).
inline std::string RandomBytes(std::mt19937_64& rng, std::size_t n) {
  std::string s(n, '\0');
  bool compressible = rng() % 2 == 0;
  for (auto& c : s) c = static_cast<char>(compressible ? 'a' + rng() % 4 : rng());
  return s;
}

inline std::optional<std::string_view> RandomField(std::mt19937_64& rng, RecordFixture& f,
                                                   std::size_t max_len) {
  switch (rng() % 5) {
    case 0:
      return std::nullopt;
    case 1:
      return f.Keep("");
    default:
      return f.Keep(RandomBytes(rng, rng() % (max_len + 1)));
  }
}

inline RecordFixture RandomRecords(std::mt19937_64& rng, std::size_t count, bool with_headers,
                                   std::int64_t base_ts) {
  RecordFixture f;
  f.headers.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (with_headers) {
      std::size_t nh = rng() % 3;
      for (std::size_t h = 0; h < nh; ++h) {
        std::string key = "h";
        key += std::to_string(rng() % 100);
        f.headers[i].push_back(Header{f.Keep(std::move(key)), RandomField(rng, f, 20)});
      }
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    Record r;
    // Timestamps wander both ways from the first, so deltas are negative too.
    r.timestamp = base_ts + static_cast<std::int64_t>(rng() % 2000000) - 1000000;
    r.key = RandomField(rng, f, 40);
    r.value = RandomField(rng, f, rng() % 8 == 0 ? 5000 : 300);
    r.headers = f.headers[i];
    f.records.push_back(r);
  }
  return f;
}

inline std::optional<std::string> Own(const std::optional<std::string_view>& v) {
  if (!v) return std::nullopt;
  return std::string(*v);
}

// Codecs a magic can carry.
// Test names like v2_lz4 (built with += : GCC 12 misreports operator+ on strings at -O3).
inline std::string CaseName(int magic, const CodecSpec& codec) {
  std::string name = "v";
  name += std::to_string(magic);
  name += "_";
  name += codec.Name();
  return name;
}

inline std::vector<CodecSpec> CodecsFor(int magic) {
  std::vector<CodecSpec> specs;
  // Every row Kafka has a compression code for (snappy in both framings), where `magic`
  // carries it.
  for (std::string_view name : KnownCodecNames()) {
    CodecSpec s = ParseCodecSpec(name);
    if (KafkaCarries(s, magic)) specs.push_back(s);
  }
  return specs;
}

}  // namespace kbench::record::testing
