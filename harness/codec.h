#pragma once

// Compression codecs. Every fact about a codec is one row of one table, CodecTable() in
// harness/codec_table.cc (CodecInfo below); its library code is one file under
// harness/codecs/, built by one kbench_codec() line of harness/codecs/CMakeLists.txt that
// also names its Debian package (scripts/setup installs it). Families, options, --help, the
// run context and every skip read the table, so adding a codec touches three files (library
// file, table row, CMake line), then tests/benchmark_list.txt is regenerated.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/bytes.h"
#include "harness/status.h"

namespace kbench {

struct LevelRange {
  int min;
  int max;
  int default_level;
};

struct CodecSpec;
class Codec;

// The same library called directly, with buffers the caller sized, and no kbench code
// around the call: the reference rows Codec/direct_* (what a hand-written loop does).
class DirectCodec {
 public:
  virtual ~DirectCodec() = default;
  // Bytes the output of Compress may need for `in_bytes` of input.
  virtual std::size_t CompressBound(std::size_t in_bytes) const = 0;
  // Each returns the bytes written to `out` (at most `capacity`), 0 on failure.
  virtual std::size_t Compress(ByteView in, std::uint8_t* out, std::size_t capacity) = 0;
  virtual std::size_t Decompress(ByteView in, std::uint8_t* out, std::size_t capacity) = 0;
};

// One codec: what kbench, Kafka, librdkafka and the run context know about it.
struct CodecInfo {
  // In --codec and in benchmark names (codec:NAME).
  std::string_view name;
  // Kafka's compression code in record attributes; none when Kafka has no such codec (the
  // record formats, Batch and Format skip it). Bit layout: harness/record.
  std::optional<std::uint8_t> kafka_attribute;
  // The first record format (magic) that may carry it (zstd: 2).
  int first_magic;
  // librdkafka's compression.codec value; empty when librdkafka cannot write it (Produce
  // skips it), and the compression.level range librdkafka accepts for it.
  std::string_view librdkafka_name;
  LevelRange librdkafka_levels;
  // The feature librdkafka needs a broker to announce before it compresses with the codec
  // (debug=feature; without it, it silently sends uncompressed); empty: none needed.
  std::string_view broker_feature;
  // The levels kbench's library accepts (level 0 always means the library's default).
  LevelRange levels;
  // The Codec family's default levels (none: not in its default matrix).
  std::span<const int> bench_levels;
  // The shared library the codec calls (empty for none), its SONAME, and the function it
  // exports that reports its version at run time (empty when it has none: snappy). Rows
  // sharing a library name it alike; the run context's loaded_libraries lists its file.
  std::string_view library;
  std::string_view soname;
  std::string_view version_function;
  // Run-context key of the library's version and its query (version_function where the
  // library has one, else its headers' version); rows sharing a library leave the key empty.
  std::string_view version_key;
  std::string (*version)();
  // Builds the codec; spec.level is within `levels`.
  std::unique_ptr<Codec> (*make)(const CodecSpec& spec);
  // The direct reference (Codec/direct_*) at `direct_level`; null: no direct rows.
  std::unique_ptr<DirectCodec> (*make_direct)(int level);
  int direct_level;
};

// Every codec, in the order families register them.
std::span<const CodecInfo> CodecTable();

// The Debian package that ships a codec's library (empty for kbench's own none), from the
// codec's kbench_codec() line in harness/codecs/CMakeLists.txt, which scripts/setup reads too.
std::string_view CodecPackage(std::string_view codec);
// Ok when librdkafka can produce with the codec at its level, else why not (from the row).
Status LibrdkafkaCanWrite(const CodecSpec& codec);
// The row whose librdkafka_name is `name`; null if none.
const CodecInfo* CodecForLibrdkafkaName(std::string_view name);

struct CodecSpec {
  // Index of the row in CodecTable(); row 0 is none.
  std::uint8_t row = 0;
  int level = 0;  // 0 = the codec's own default; ignored by none and snappy
  // Real clients keep one compression context per producer; the fresh variant pays
  // context creation per batch, as a naive implementation would.
  bool reuse_context = true;

  const CodecInfo& info() const { return CodecTable()[row]; }
  // The row's name, used in benchmark names (codec:NAME).
  std::string Name() const { return std::string(info().name); }
  bool is_none() const { return row == 0; }
  bool operator==(const CodecSpec&) const = default;
};

// The codec Kafka's compression code `attribute` reads with (its first row: snappy, not
// snappy_xerial, whose reader takes both framings); none if Kafka has no such code.
std::optional<CodecSpec> CodecSpecForKafkaAttribute(unsigned attribute);
// The rows of Kafka's codecs, one per compression code: what the record formats write.
std::vector<CodecSpec> KafkaCodecs();
// Whether Kafka's record format `magic` can carry the codec (zstd: magic 2 only; a codec
// Kafka lacks: none).
inline bool KafkaCarries(const CodecSpec& codec, int magic) {
  return codec.info().kafka_attribute && magic >= codec.info().first_magic;
}

// Default cap on decompressed size: bounds the memory a corrupt or hostile input can make
// the reader allocate (Kafka's own batch limit is far below this).
inline constexpr std::size_t kMaxDecompressedBytes = 256u << 20;

class Codec {
 public:
  virtual ~Codec() = default;
  const CodecSpec& spec() const { return spec_; }

  // Replaces `out` with the compressed form of `in`.
  virtual Status Compress(ByteView in, ByteBuffer& out) = 0;
  // Replaces `out` with the decompressed form of `in`; fails (never crashes) on truncated,
  // corrupt or oversized input.
  virtual Status Decompress(ByteView in, ByteBuffer& out,
                            std::size_t max_out = kMaxDecompressedBytes) = 0;

 protected:
  explicit Codec(CodecSpec spec) : spec_(spec) {}

 private:
  CodecSpec spec_;
};

// Validates the spec (level within range) and builds the codec. Throws UsageError with a
// message listing the valid values.
std::unique_ptr<Codec> MakeCodec(const CodecSpec& spec);

// Parses "zstd", "zstd:3", "lz4:-1", "snappy_xerial", "gzip:9". Throws UsageError that
// lists the valid codecs and the level range.
CodecSpec ParseCodecSpec(std::string_view text);

// All codec names ParseCodecSpec accepts, for help and error messages.
const std::vector<std::string_view>& KnownCodecNames();
// "none, gzip, snappy, ..." with each level range, for --help.
std::string CodecHelp();

// Run-context entries (key, version) of every codec library, read from the libraries.
std::vector<std::pair<std::string, std::string>> CodecLibraryVersions();

}  // namespace kbench
