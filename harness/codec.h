#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "harness/bytes.h"
#include "harness/status.h"

namespace kbench {

// Values are Kafka's compression attribute bits (RecordBatch attributes bits 0-2).
enum class CodecId : std::uint8_t { kNone = 0, kGzip = 1, kSnappy = 2, kLz4 = 3, kZstd = 4 };

// Snappy has two framings on Kafka's wire: librdkafka writes a raw snappy block, the Java
// client writes xerial framing. Readers must accept both.
enum class SnappyFraming : std::uint8_t { kRaw, kXerial };

struct CodecSpec {
  CodecId id = CodecId::kNone;
  int level = 0;  // 0 = the codec's own default; ignored by none and snappy
  SnappyFraming snappy_framing = SnappyFraming::kRaw;
  // Real clients keep one compression context per producer; the fresh variant pays
  // context creation per batch, as a naive implementation would.
  bool reuse_context = true;

  // Stable short name used in benchmark names: none, gzip, snappy, snappy_xerial, lz4, zstd.
  std::string Name() const;
  bool operator==(const CodecSpec&) const = default;
};

struct LevelRange {
  int min;
  int max;
  int default_level;
};

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

std::string_view CodecName(CodecId id);
// The level range each library accepts, as kbench exposes it.
LevelRange CodecLevels(CodecId id);

// Validates the spec (level within range) and builds the codec. Throws UsageError with a
// message listing the valid values.
std::unique_ptr<Codec> MakeCodec(const CodecSpec& spec);

// Parses "zstd", "zstd:3", "lz4:-1", "snappy_xerial", "gzip:9". Throws UsageError that
// lists the valid codecs and the level range.
CodecSpec ParseCodecSpec(std::string_view text);

// All codec names ParseCodecSpec accepts, for help and error messages.
const std::vector<std::string_view>& KnownCodecNames();

// Runtime versions of the compression libraries, read from the libraries themselves
// (snappy has no runtime query; its header version is reported).
struct CodecLibraryVersions {
  std::string zlib, zstd, lz4, snappy;
};
CodecLibraryVersions GetCodecLibraryVersions();

}  // namespace kbench
