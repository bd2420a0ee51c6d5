#include "harness/codec.h"

#include <lz4.h>
#include <lz4frame.h>
#include <lz4hc.h>
#include <snappy-stubs-public.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <sstream>

namespace kbench {
namespace {

// ---------------------------------------------------------------- none

class NoneCodec final : public Codec {
 public:
  explicit NoneCodec(CodecSpec spec) : Codec(spec) {}
  Status Compress(ByteView in, ByteBuffer& out) override {
    out.Assign(in);
    return Status::Ok();
  }
  Status Decompress(ByteView in, ByteBuffer& out, std::size_t max_out) override {
    if (in.size() > max_out) return Status::Error("none: input exceeds the decompressed size cap");
    out.Assign(in);
    return Status::Ok();
  }
};

// ---------------------------------------------------------------- gzip

// zlib's windowBits + 16 selects the gzip wrapper, which is what Kafka puts on the wire.
constexpr int kGzipWindowBits = 15 + 16;

class GzipCodec final : public Codec {
 public:
  explicit GzipCodec(CodecSpec spec) : Codec(spec) {
    if (spec.reuse_context) {
      deflate_ready_ = InitDeflate(deflate_).ok();
      inflate_ready_ = InitInflate(inflate_).ok();
    }
  }
  ~GzipCodec() override {
    if (deflate_ready_) deflateEnd(&deflate_);
    if (inflate_ready_) inflateEnd(&inflate_);
  }

  Status Compress(ByteView in, ByteBuffer& out) override {
    z_stream fresh{};
    z_stream* zs = &deflate_;
    if (spec().reuse_context) {
      if (!deflate_ready_) return Status::Error("gzip: no deflate context");
      deflateReset(zs);
    } else {
      zs = &fresh;
      if (Status s = InitDeflate(fresh); !s) return s;
    }
    out.ResizeUninitialized(deflateBound(zs, static_cast<uLong>(in.size())));
    zs->next_in = const_cast<Bytef*>(in.data());
    zs->avail_in = static_cast<uInt>(in.size());
    zs->next_out = out.data();
    zs->avail_out = static_cast<uInt>(out.size());
    int rc = deflate(zs, Z_FINISH);
    out.ResizeUninitialized(out.size() - zs->avail_out);
    if (!spec().reuse_context) deflateEnd(&fresh);
    if (rc != Z_STREAM_END) return Status::Error("gzip: deflate failed");
    return Status::Ok();
  }

  Status Decompress(ByteView in, ByteBuffer& out, std::size_t max_out) override {
    z_stream fresh{};
    z_stream* zs = &inflate_;
    if (spec().reuse_context) {
      if (!inflate_ready_) return Status::Error("gzip: no inflate context");
      inflateReset(zs);
    } else {
      zs = &fresh;
      if (Status s = InitInflate(fresh); !s) return s;
    }
    Status result = InflateAll(*zs, in, out, max_out);
    if (!spec().reuse_context) inflateEnd(&fresh);
    return result;
  }

 private:
  Status InitDeflate(z_stream& zs) {
    int level = spec().level == 0 ? Z_DEFAULT_COMPRESSION : spec().level;
    if (deflateInit2(&zs, level, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      return Status::Error("gzip: deflateInit2 failed");
    }
    return Status::Ok();
  }
  static Status InitInflate(z_stream& zs) {
    if (inflateInit2(&zs, kGzipWindowBits) != Z_OK)
      return Status::Error("gzip: inflateInit2 failed");
    return Status::Ok();
  }
  static Status InflateAll(z_stream& zs, ByteView in, ByteBuffer& out, std::size_t max_out) {
    if (in.size() > std::numeric_limits<uInt>::max()) return Status::Error("gzip: input too large");
    // Start from a guess (gzip's trailer holds the size mod 2^32, but it is untrusted input).
    std::size_t cap = std::min(max_out, std::max<std::size_t>(in.size() * 4, 4096));
    out.ResizeUninitialized(cap);
    zs.next_in = const_cast<Bytef*>(in.data());
    zs.avail_in = static_cast<uInt>(in.size());
    std::size_t produced = 0;
    for (;;) {
      zs.next_out = out.data() + produced;
      zs.avail_out = static_cast<uInt>(
          std::min<std::size_t>(out.size() - produced, std::numeric_limits<uInt>::max()));
      uInt before = zs.avail_out;
      int rc = inflate(&zs, Z_FINISH);
      produced += before - zs.avail_out;
      if (rc == Z_STREAM_END) break;
      if (rc == Z_BUF_ERROR && zs.avail_out == 0) {
        if (out.size() >= max_out) {
          out.clear();
          return Status::Error("gzip: decompressed size exceeds the cap of " +
                               std::to_string(max_out) + " bytes");
        }
        out.ResizeUninitialized(std::min(max_out, out.size() * 2));
        continue;
      }
      out.clear();
      if (rc == Z_BUF_ERROR) return Status::Error("gzip: truncated input");
      return Status::Error(std::string("gzip: corrupt input (") +
                           (zs.msg ? zs.msg : "inflate error") + ")");
    }
    if (zs.avail_in != 0) {
      out.clear();
      return Status::Error("gzip: trailing bytes after the gzip stream");
    }
    out.ResizeUninitialized(produced);
    return Status::Ok();
  }

  z_stream deflate_{};
  z_stream inflate_{};
  bool deflate_ready_ = false;
  bool inflate_ready_ = false;
};

// ---------------------------------------------------------------- snappy

// xerial snappy-java framing as the Java client writes it: magic, version 1, compatible
// version 1, then (big-endian int32 length, raw snappy block) per 32 KiB of input.
constexpr std::array<std::uint8_t, 8> kXerialMagic = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr std::size_t kXerialHeaderBytes = 16;
constexpr std::size_t kXerialBlockBytes = 32 * 1024;

void PutBigEndian32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}
std::uint32_t GetBigEndian32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

class SnappyCodec final : public Codec {
 public:
  explicit SnappyCodec(CodecSpec spec) : Codec(spec) {}

  Status Compress(ByteView in, ByteBuffer& out) override {
    const char* src = reinterpret_cast<const char*>(in.data());
    if (spec().snappy_framing == SnappyFraming::kRaw) {
      out.ResizeUninitialized(snappy::MaxCompressedLength(in.size()));
      std::size_t n = 0;
      snappy::RawCompress(src, in.size(), reinterpret_cast<char*>(out.data()), &n);
      out.ResizeUninitialized(n);
      return Status::Ok();
    }
    std::size_t blocks = (in.size() + kXerialBlockBytes - 1) / kXerialBlockBytes;
    out.ResizeUninitialized(kXerialHeaderBytes +
                            blocks * (4 + snappy::MaxCompressedLength(kXerialBlockBytes)));
    std::uint8_t* p = out.data();
    std::memcpy(p, kXerialMagic.data(), kXerialMagic.size());
    PutBigEndian32(p + 8, 1);   // version
    PutBigEndian32(p + 12, 1);  // minimum compatible version
    std::size_t pos = kXerialHeaderBytes;
    for (std::size_t off = 0; off < in.size(); off += kXerialBlockBytes) {
      std::size_t len = std::min(kXerialBlockBytes, in.size() - off);
      std::size_t n = 0;
      snappy::RawCompress(src + off, len, reinterpret_cast<char*>(p + pos + 4), &n);
      PutBigEndian32(p + pos, static_cast<std::uint32_t>(n));
      pos += 4 + n;
    }
    out.ResizeUninitialized(pos);
    return Status::Ok();
  }

  Status Decompress(ByteView in, ByteBuffer& out, std::size_t max_out) override {
    out.clear();
    if (in.size() >= kXerialHeaderBytes &&
        std::memcmp(in.data(), kXerialMagic.data(), kXerialMagic.size()) == 0) {
      return DecompressXerial(in, out, max_out);
    }
    return AppendRawBlock(in, out, max_out, "snappy");
  }

 private:
  static Status AppendRawBlock(ByteView block, ByteBuffer& out, std::size_t max_out,
                               const char* what) {
    const char* src = reinterpret_cast<const char*>(block.data());
    std::size_t n = 0;
    if (!snappy::GetUncompressedLength(src, block.size(), &n)) {
      return Status::Error(std::string(what) + ": corrupt input (bad length preamble)");
    }
    if (n > max_out - out.size()) {
      return Status::Error(std::string(what) + ": decompressed size exceeds the cap of " +
                           std::to_string(max_out) + " bytes");
    }
    std::size_t at = out.size();
    out.ResizeUninitialized(at + n);
    if (!snappy::RawUncompress(src, block.size(), reinterpret_cast<char*>(out.data() + at))) {
      out.clear();
      return Status::Error(std::string(what) + ": corrupt or truncated input");
    }
    return Status::Ok();
  }

  static Status DecompressXerial(ByteView in, ByteBuffer& out, std::size_t max_out) {
    std::size_t pos = kXerialHeaderBytes;
    while (pos < in.size()) {
      if (in.size() - pos < 4) {
        out.clear();
        return Status::Error("snappy (xerial): truncated block length");
      }
      std::size_t len = GetBigEndian32(in.data() + pos);
      pos += 4;
      if (len > in.size() - pos) {
        out.clear();
        return Status::Error("snappy (xerial): block length " + std::to_string(len) +
                             " exceeds the remaining " + std::to_string(in.size() - pos) +
                             " bytes");
      }
      if (Status s = AppendRawBlock(in.subspan(pos, len), out, max_out, "snappy (xerial)"); !s) {
        out.clear();
        return s;
      }
      pos += len;
    }
    return Status::Ok();
  }
};

// ---------------------------------------------------------------- lz4

// Kafka (v1+) uses the LZ4 frame format; both clients write 64 KiB independent blocks.
LZ4F_preferences_t Lz4Preferences(int level) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
  prefs.compressionLevel = level;
  return prefs;
}

class Lz4Codec final : public Codec {
 public:
  explicit Lz4Codec(CodecSpec spec) : Codec(spec), prefs_(Lz4Preferences(spec.level)) {
    if (spec.reuse_context) {
      if (LZ4F_isError(LZ4F_createCompressionContext(&cctx_, LZ4F_VERSION))) cctx_ = nullptr;
      if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx_, LZ4F_VERSION))) dctx_ = nullptr;
    }
  }
  ~Lz4Codec() override {
    if (cctx_) LZ4F_freeCompressionContext(cctx_);
    if (dctx_) LZ4F_freeDecompressionContext(dctx_);
  }

  Status Compress(ByteView in, ByteBuffer& out) override {
    LZ4F_cctx* cctx = cctx_;
    if (!spec().reuse_context || !cctx) {
      if (LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION))) {
        return Status::Error("lz4: cannot create a compression context");
      }
    }
    Status s = CompressWith(cctx, in, out);
    if (cctx != cctx_) LZ4F_freeCompressionContext(cctx);
    return s;
  }

  Status Decompress(ByteView in, ByteBuffer& out, std::size_t max_out) override {
    LZ4F_dctx* dctx = dctx_;
    if (!spec().reuse_context || !dctx) {
      if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION))) {
        return Status::Error("lz4: cannot create a decompression context");
      }
    } else {
      LZ4F_resetDecompressionContext(dctx);
    }
    Status s = DecompressWith(dctx, in, out, max_out);
    if (dctx != dctx_) LZ4F_freeDecompressionContext(dctx);
    return s;
  }

 private:
  Status CompressWith(LZ4F_cctx* cctx, ByteView in, ByteBuffer& out) {
    // The streaming calls (rather than LZ4F_compressFrame) reuse the context's state.
    std::size_t bound = LZ4F_HEADER_SIZE_MAX + LZ4F_compressBound(in.size(), &prefs_);
    out.ResizeUninitialized(bound);
    std::size_t pos = LZ4F_compressBegin(cctx, out.data(), bound, &prefs_);
    if (LZ4F_isError(pos)) return Status::Error(std::string("lz4: ") + LZ4F_getErrorName(pos));
    std::size_t n =
        LZ4F_compressUpdate(cctx, out.data() + pos, bound - pos, in.data(), in.size(), nullptr);
    if (LZ4F_isError(n)) return Status::Error(std::string("lz4: ") + LZ4F_getErrorName(n));
    pos += n;
    n = LZ4F_compressEnd(cctx, out.data() + pos, bound - pos, nullptr);
    if (LZ4F_isError(n)) return Status::Error(std::string("lz4: ") + LZ4F_getErrorName(n));
    out.ResizeUninitialized(pos + n);
    return Status::Ok();
  }

  static Status DecompressWith(LZ4F_dctx* dctx, ByteView in, ByteBuffer& out, std::size_t max_out) {
    std::size_t cap = std::min(max_out, std::max<std::size_t>(in.size() * 4, 64 * 1024));
    out.ResizeUninitialized(cap);
    std::size_t in_pos = 0;
    std::size_t produced = 0;
    std::size_t hint = 1;
    while (in_pos < in.size()) {
      if (produced == out.size()) {
        if (out.size() >= max_out) {
          out.clear();
          return Status::Error("lz4: decompressed size exceeds the cap of " +
                               std::to_string(max_out) + " bytes");
        }
        out.ResizeUninitialized(std::min(max_out, out.size() * 2));
      }
      std::size_t src_size = in.size() - in_pos;
      std::size_t dst_size = out.size() - produced;
      hint = LZ4F_decompress(dctx, out.data() + produced, &dst_size, in.data() + in_pos, &src_size,
                             nullptr);
      if (LZ4F_isError(hint)) {
        out.clear();
        return Status::Error(std::string("lz4: corrupt input (") + LZ4F_getErrorName(hint) + ")");
      }
      in_pos += src_size;
      produced += dst_size;
      if (hint == 0) break;  // frame complete
      if (src_size == 0 && dst_size == 0 && produced < out.size()) {
        out.clear();
        return Status::Error("lz4: decoder made no progress");
      }
    }
    if (hint != 0) {
      out.clear();
      return Status::Error("lz4: truncated frame");
    }
    if (in_pos != in.size()) {
      out.clear();
      return Status::Error("lz4: trailing bytes after the frame");
    }
    out.ResizeUninitialized(produced);
    return Status::Ok();
  }

  LZ4F_preferences_t prefs_;
  LZ4F_cctx* cctx_ = nullptr;
  LZ4F_dctx* dctx_ = nullptr;
};

// ---------------------------------------------------------------- zstd

class ZstdCodec final : public Codec {
 public:
  explicit ZstdCodec(CodecSpec spec) : Codec(spec) {
    if (spec.reuse_context) {
      cctx_ = ZSTD_createCCtx();
      dctx_ = ZSTD_createDCtx();
    }
  }
  ~ZstdCodec() override {
    ZSTD_freeCCtx(cctx_);
    ZSTD_freeDCtx(dctx_);
  }

  Status Compress(ByteView in, ByteBuffer& out) override {
    int level = spec().level == 0 ? ZSTD_CLEVEL_DEFAULT : spec().level;
    out.ResizeUninitialized(ZSTD_compressBound(in.size()));
    std::size_t n;
    if (spec().reuse_context && cctx_) {
      n = ZSTD_compressCCtx(cctx_, out.data(), out.size(), in.data(), in.size(), level);
    } else {
      n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), level);  // fresh context
    }
    if (ZSTD_isError(n)) {
      out.clear();
      return Status::Error(std::string("zstd: ") + ZSTD_getErrorName(n));
    }
    out.ResizeUninitialized(n);
    return Status::Ok();
  }

  Status Decompress(ByteView in, ByteBuffer& out, std::size_t max_out) override {
    ZSTD_DCtx* dctx = dctx_;
    if (!spec().reuse_context || !dctx) dctx = ZSTD_createDCtx();
    if (!dctx) return Status::Error("zstd: cannot create a decompression context");
    Status s = DecompressWith(dctx, in, out, max_out);
    if (dctx != dctx_) ZSTD_freeDCtx(dctx);
    return s;
  }

 private:
  // Streaming decode: the Java client's zstd stream does not record the content size, so
  // it may be unknown; when the frame declares it (and it is within the cap) it sizes the
  // output exactly.
  static Status DecompressWith(ZSTD_DCtx* dctx, ByteView in, ByteBuffer& out, std::size_t max_out) {
    ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
    if (declared == ZSTD_CONTENTSIZE_ERROR) {
      out.clear();
      return Status::Error("zstd: corrupt input (not a zstd frame)");
    }
    std::size_t cap = std::max<std::size_t>(in.size() * 4, 64 * 1024);
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN) {
      if (declared > max_out) {
        out.clear();
        return Status::Error("zstd: declared size " + std::to_string(declared) +
                             " exceeds the cap of " + std::to_string(max_out) + " bytes");
      }
      cap = static_cast<std::size_t>(declared) + 1;  // +1 lets a lying header be detected
    }
    out.ResizeUninitialized(std::min(cap, max_out));
    ZSTD_inBuffer src{in.data(), in.size(), 0};
    std::size_t produced = 0;
    std::size_t rc = 1;
    while (rc != 0) {
      if (produced == out.size()) {
        if (out.size() >= max_out) {
          out.clear();
          return Status::Error("zstd: decompressed size exceeds the cap of " +
                               std::to_string(max_out) + " bytes");
        }
        out.ResizeUninitialized(std::min(max_out, out.size() * 2));
      }
      ZSTD_outBuffer dst{out.data(), out.size(), produced};
      std::size_t in_before = src.pos;
      rc = ZSTD_decompressStream(dctx, &dst, &src);
      if (ZSTD_isError(rc)) {
        out.clear();
        return Status::Error(std::string("zstd: corrupt input (") + ZSTD_getErrorName(rc) + ")");
      }
      bool progressed = dst.pos != produced || src.pos != in_before;
      produced = dst.pos;
      if (rc != 0 && src.pos == src.size && !progressed) {
        out.clear();
        return Status::Error("zstd: truncated frame");
      }
    }
    if (src.pos != src.size) {
      out.clear();
      return Status::Error("zstd: trailing bytes after the frame");
    }
    out.ResizeUninitialized(produced);
    return Status::Ok();
  }

  ZSTD_CCtx* cctx_ = nullptr;
  ZSTD_DCtx* dctx_ = nullptr;
};

struct CodecEntry {
  std::string_view name;
  CodecId id;
  SnappyFraming framing;
};
constexpr std::array<CodecEntry, 6> kCodecTable = {{
    {"none", CodecId::kNone, SnappyFraming::kRaw},
    {"gzip", CodecId::kGzip, SnappyFraming::kRaw},
    {"snappy", CodecId::kSnappy, SnappyFraming::kRaw},
    {"snappy_xerial", CodecId::kSnappy, SnappyFraming::kXerial},
    {"lz4", CodecId::kLz4, SnappyFraming::kRaw},
    {"zstd", CodecId::kZstd, SnappyFraming::kRaw},
}};

std::string KnownCodecList() {
  std::string list;
  for (const auto& e : kCodecTable) {
    if (!list.empty()) list += ", ";
    list += e.name;
  }
  return list;
}

}  // namespace

std::string_view CodecName(CodecId id) {
  switch (id) {
    case CodecId::kNone:
      return "none";
    case CodecId::kGzip:
      return "gzip";
    case CodecId::kSnappy:
      return "snappy";
    case CodecId::kLz4:
      return "lz4";
    case CodecId::kZstd:
      return "zstd";
  }
  return "unknown";
}

std::string CodecSpec::Name() const {
  if (id == CodecId::kSnappy && snappy_framing == SnappyFraming::kXerial) return "snappy_xerial";
  return std::string(CodecName(id));
}

LevelRange CodecLevels(CodecId id) {
  switch (id) {
    case CodecId::kNone:
    case CodecId::kSnappy:  // no levels
      return {0, 0, 0};
    case CodecId::kGzip:
      return {1, 9, 6};
    // lz4: below 3 is the fast compressor (negative = faster, lower ratio), 3+ is HC.
    case CodecId::kLz4:
      return {-16, LZ4HC_CLEVEL_MAX, 1};
    // zstd: negative levels are its fast modes; -7 is the fastest kbench exposes.
    case CodecId::kZstd:
      return {-7, ZSTD_maxCLevel(), ZSTD_CLEVEL_DEFAULT};
  }
  return {0, 0, 0};
}

const std::vector<std::string_view>& KnownCodecNames() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> v;
    for (const auto& e : kCodecTable) v.push_back(e.name);
    return v;
  }();
  return names;
}

std::unique_ptr<Codec> MakeCodec(const CodecSpec& spec) {
  LevelRange range = CodecLevels(spec.id);
  if (spec.level != 0 && (spec.level < range.min || spec.level > range.max)) {
    std::ostringstream msg;
    msg << "level " << spec.level << " is out of range for " << spec.Name();
    if (range.min == range.max) {
      msg << ": it takes no level";
    } else {
      msg << ": valid levels are " << range.min << " to " << range.max << " (default "
          << range.default_level << ")";
    }
    throw UsageError(msg.str());
  }
  switch (spec.id) {
    case CodecId::kNone:
      return std::make_unique<NoneCodec>(spec);
    case CodecId::kGzip:
      return std::make_unique<GzipCodec>(spec);
    case CodecId::kSnappy:
      return std::make_unique<SnappyCodec>(spec);
    case CodecId::kLz4:
      return std::make_unique<Lz4Codec>(spec);
    case CodecId::kZstd:
      return std::make_unique<ZstdCodec>(spec);
  }
  throw UsageError("unknown codec id");
}

CodecSpec ParseCodecSpec(std::string_view text) {
  std::string_view name = text;
  std::string_view level_text;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    level_text = text.substr(colon + 1);
  }
  const CodecEntry* entry = nullptr;
  for (const auto& e : kCodecTable) {
    if (e.name == name) entry = &e;
  }
  if (!entry) {
    throw UsageError("unknown codec '" + std::string(name) + "': valid codecs are " +
                     KnownCodecList() + " (optionally with :LEVEL, e.g. zstd:3)");
  }
  CodecSpec spec;
  spec.id = entry->id;
  spec.snappy_framing = entry->framing;
  if (!level_text.empty()) {
    std::size_t used = 0;
    int level = 0;
    try {
      level = std::stoi(std::string(level_text), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != level_text.size()) {
      throw UsageError("codec level '" + std::string(level_text) + "' is not an integer");
    }
    LevelRange range = CodecLevels(spec.id);
    if (level < range.min || level > range.max || (range.min == range.max && level != 0)) {
      spec.level = level;
      MakeCodec(spec);  // throws the range message
    }
    spec.level = level;
  }
  return spec;
}

CodecLibraryVersions GetCodecLibraryVersions() {
  CodecLibraryVersions v;
  v.zlib = zlibVersion();
  v.zstd = ZSTD_versionString();
  v.lz4 = LZ4_versionString();
  // snappy exposes no runtime version query; this is the version of the headers built
  // against (Debian ships matching headers and library).
  v.snappy = std::to_string(SNAPPY_MAJOR) + "." + std::to_string(SNAPPY_MINOR) + "." +
             std::to_string(SNAPPY_PATCHLEVEL);
  return v;
}

}  // namespace kbench
