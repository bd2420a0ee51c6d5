// Codec "zstd" (Kafka attribute 4, record format v2 only).

#include <zstd.h>

#include <algorithm>
#include <memory>
#include <string>

#include "harness/codec.h"

namespace kbench::codecs {
namespace {

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

class ZstdDirect final : public DirectCodec {
 public:
  explicit ZstdDirect(int level) : level_(level) {}
  ~ZstdDirect() override {
    ZSTD_freeCCtx(cctx_);
    ZSTD_freeDCtx(dctx_);
  }
  ZstdDirect(const ZstdDirect&) = delete;
  ZstdDirect& operator=(const ZstdDirect&) = delete;

  std::size_t CompressBound(std::size_t n) const override { return ZSTD_compressBound(n); }
  std::size_t Compress(ByteView in, std::uint8_t* out, std::size_t capacity) override {
    std::size_t n = ZSTD_compressCCtx(cctx_, out, capacity, in.data(), in.size(), level_);
    return ZSTD_isError(n) ? 0 : n;
  }
  std::size_t Decompress(ByteView in, std::uint8_t* out, std::size_t capacity) override {
    std::size_t n = ZSTD_decompressDCtx(dctx_, out, capacity, in.data(), in.size());
    return ZSTD_isError(n) ? 0 : n;
  }

 private:
  int level_;
  ZSTD_CCtx* cctx_ = ZSTD_createCCtx();
  ZSTD_DCtx* dctx_ = ZSTD_createDCtx();
};

}  // namespace

std::unique_ptr<Codec> MakeZstd(const CodecSpec& spec) { return std::make_unique<ZstdCodec>(spec); }
std::unique_ptr<DirectCodec> MakeZstdDirect(int level) {
  return std::make_unique<ZstdDirect>(level);
}
std::string ZstdVersion() { return ZSTD_versionString(); }
// zstd's level range reaches its library's maximum (22 in 1.5).
int ZstdMaxLevel() { return ZSTD_maxCLevel(); }

}  // namespace kbench::codecs
