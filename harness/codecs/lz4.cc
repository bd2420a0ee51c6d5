// Codec "lz4": the LZ4 frame format (Kafka attribute 3; magic 0's wrong header checksum,
// KAFKA-3160, is the record format's business: harness/record/record_codec.cc).

#include <lz4.h>
#include <lz4frame.h>
#include <lz4hc.h>

#include <algorithm>
#include <memory>
#include <string>

#include "harness/codec.h"

namespace kbench::codecs {
namespace {

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

class Lz4Direct final : public DirectCodec {
 public:
  explicit Lz4Direct(int level) {
    LZ4F_createCompressionContext(&cctx_, LZ4F_VERSION);
    LZ4F_createDecompressionContext(&dctx_, LZ4F_VERSION);
    prefs_.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs_.frameInfo.blockMode = LZ4F_blockIndependent;
    prefs_.compressionLevel = level;
  }
  ~Lz4Direct() override {
    LZ4F_freeCompressionContext(cctx_);
    LZ4F_freeDecompressionContext(dctx_);
  }
  Lz4Direct(const Lz4Direct&) = delete;
  Lz4Direct& operator=(const Lz4Direct&) = delete;

  std::size_t CompressBound(std::size_t n) const override {
    return LZ4F_HEADER_SIZE_MAX + LZ4F_compressBound(n, &prefs_);
  }
  std::size_t Compress(ByteView in, std::uint8_t* out, std::size_t capacity) override {
    std::size_t pos = LZ4F_compressBegin(cctx_, out, capacity, &prefs_);
    pos += LZ4F_compressUpdate(cctx_, out + pos, capacity - pos, in.data(), in.size(), nullptr);
    pos += LZ4F_compressEnd(cctx_, out + pos, capacity - pos, nullptr);
    return pos;
  }
  std::size_t Decompress(ByteView in, std::uint8_t* out, std::size_t capacity) override {
    LZ4F_resetDecompressionContext(dctx_);
    std::size_t dst = capacity;
    std::size_t consumed = in.size();
    LZ4F_decompress(dctx_, out, &dst, in.data(), &consumed, nullptr);
    return dst;
  }

 private:
  LZ4F_cctx* cctx_ = nullptr;
  LZ4F_dctx* dctx_ = nullptr;
  LZ4F_preferences_t prefs_{};
};

}  // namespace

std::unique_ptr<Codec> MakeLz4(const CodecSpec& spec) { return std::make_unique<Lz4Codec>(spec); }
std::unique_ptr<DirectCodec> MakeLz4Direct(int level) { return std::make_unique<Lz4Direct>(level); }
std::string Lz4Version() { return LZ4_versionString(); }

}  // namespace kbench::codecs
