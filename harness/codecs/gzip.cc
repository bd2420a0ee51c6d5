// Codec "gzip": zlib with the gzip wrapper, as Kafka puts it on the wire.

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include "harness/codec.h"

namespace kbench::codecs {
namespace {

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

class GzipDirect final : public DirectCodec {
 public:
  explicit GzipDirect(int level) {
    deflateInit2(&deflate_, level, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY);
    inflateInit2(&inflate_, kGzipWindowBits);
  }
  ~GzipDirect() override {
    deflateEnd(&deflate_);
    inflateEnd(&inflate_);
  }
  GzipDirect(const GzipDirect&) = delete;
  GzipDirect& operator=(const GzipDirect&) = delete;

  std::size_t CompressBound(std::size_t n) const override {
    return deflateBound(const_cast<z_stream*>(&deflate_), static_cast<uLong>(n));
  }
  std::size_t Compress(ByteView in, std::uint8_t* out, std::size_t capacity) override {
    deflateReset(&deflate_);
    deflate_.next_in = const_cast<Bytef*>(in.data());
    deflate_.avail_in = static_cast<uInt>(in.size());
    deflate_.next_out = out;
    deflate_.avail_out = static_cast<uInt>(capacity);
    return deflate(&deflate_, Z_FINISH) == Z_STREAM_END ? deflate_.total_out : 0;
  }
  std::size_t Decompress(ByteView in, std::uint8_t* out, std::size_t capacity) override {
    inflateReset(&inflate_);
    inflate_.next_in = const_cast<Bytef*>(in.data());
    inflate_.avail_in = static_cast<uInt>(in.size());
    inflate_.next_out = out;
    inflate_.avail_out = static_cast<uInt>(capacity);
    return inflate(&inflate_, Z_FINISH) == Z_STREAM_END ? inflate_.total_out : 0;
  }

 private:
  z_stream deflate_{};
  z_stream inflate_{};
};

}  // namespace

std::unique_ptr<Codec> MakeGzip(const CodecSpec& spec) { return std::make_unique<GzipCodec>(spec); }
std::unique_ptr<DirectCodec> MakeGzipDirect(int level) {
  return std::make_unique<GzipDirect>(level);
}
std::string ZlibVersion() { return zlibVersion(); }

}  // namespace kbench::codecs
