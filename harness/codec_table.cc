// The codec table: one row per codec (harness/codec.h says what each field means). A codec's
// library code is one file under harness/codecs/, declared here next to its row.

#include <array>
#include <memory>
#include <span>
#include <string>

#include "harness/codec.h"

namespace kbench {
namespace codecs {
std::unique_ptr<Codec> MakeNone(const CodecSpec&);
std::unique_ptr<Codec> MakeGzip(const CodecSpec&);
std::unique_ptr<DirectCodec> MakeGzipDirect(int level);
std::string ZlibVersion();
std::unique_ptr<Codec> MakeSnappy(const CodecSpec&);
std::unique_ptr<Codec> MakeSnappyXerial(const CodecSpec&);
std::unique_ptr<DirectCodec> MakeSnappyDirect(int level);
std::string SnappyVersion();
std::unique_ptr<Codec> MakeLz4(const CodecSpec&);
std::unique_ptr<DirectCodec> MakeLz4Direct(int level);
std::string Lz4Version();
std::unique_ptr<Codec> MakeZstd(const CodecSpec&);
std::unique_ptr<DirectCodec> MakeZstdDirect(int level);
std::string ZstdVersion();
int ZstdMaxLevel();
}  // namespace codecs

namespace {
// The Codec family's default levels. lz4 1: fast (librdkafka's default), 9: HC (the Java
// client's default); zstd -5 is one of its fast modes.
constexpr std::array<int, 3> kGzipLevels = {1, 6, 9};
constexpr std::array<int, 1> kNoLevel = {0};
constexpr std::array<int, 2> kLz4Levels = {1, 9};
constexpr std::array<int, 5> kZstdLevels = {-5, 1, 3, 9, 19};
// librdkafka's compression.level: gzip 0-9, lz4 0-12 (3+ is HC), zstd up to 12 in the
// setting's range; snappy ignores it. -1 (its default) is written for level 0.
constexpr LevelRange kNoLevels = {0, 0, 0};
}  // namespace

std::span<const CodecInfo> CodecTable() {
  // name, Kafka attribute, first magic, librdkafka name and levels, broker feature,
  // kbench's levels, Codec family levels, library, its SONAME and version function, version
  // key and query, factory, direct factory and level.
  static const CodecInfo table[] = {
      {"none",
       0,
       0,
       "none",
       kNoLevels,
       "",
       kNoLevels,
       {},
       "",
       "",
       "",
       "",
       nullptr,
       codecs::MakeNone,
       nullptr,
       0},
      {"gzip",
       1,
       0,
       "gzip",
       {1, 9, 6},
       "",
       {1, 9, 6},
       kGzipLevels,
       "zlib",
       "libz.so.1",
       "zlibVersion",
       "zlib_version",
       codecs::ZlibVersion,
       codecs::MakeGzip,
       codecs::MakeGzipDirect,
       6},
      {"snappy", 2, 0, "snappy", kNoLevels, "", kNoLevels, kNoLevel, "snappy", "libsnappy.so.1", "",
       "snappy_version", codecs::SnappyVersion, codecs::MakeSnappy, codecs::MakeSnappyDirect, 0},
      // The Java client's framing; librdkafka always writes raw snappy.
      {"snappy_xerial", 2, 0, "", kNoLevels, "", kNoLevels, kNoLevel, "snappy", "libsnappy.so.1",
       "", "", nullptr, codecs::MakeSnappyXerial, nullptr, 0},
      // lz4: below 3 is the fast compressor (negative = faster, lower ratio), 3+ is HC up to
      // LZ4HC_CLEVEL_MAX (12); the frame format needs magic 1 (magic 0 wrote a broken one).
      {"lz4",
       3,
       0,
       "lz4",
       {1, 12, 0},
       "LZ4",
       {-16, 12, 1},
       kLz4Levels,
       "lz4",
       "liblz4.so.1",
       "LZ4_versionString",
       "lz4_version",
       codecs::Lz4Version,
       codecs::MakeLz4,
       codecs::MakeLz4Direct,
       1},
      // zstd: negative levels are its fast modes; -7 is the fastest kbench exposes. Kafka
      // carries it in v2 batches only (and Produce v7).
      {"zstd",
       4,
       2,
       "zstd",
       {1, 12, 0},
       "ZSTD",
       {-7, codecs::ZstdMaxLevel(), 3},
       kZstdLevels,
       "zstd",
       "libzstd.so.1",
       "ZSTD_versionString",
       "zstd_version",
       codecs::ZstdVersion,
       codecs::MakeZstd,
       codecs::MakeZstdDirect,
       3},
  };
  return table;
}

}  // namespace kbench
