// Codecs "snappy" and "snappy_xerial" (Kafka attribute 2). Snappy has two framings on
// Kafka's wire: librdkafka writes a raw snappy block, the Java client writes xerial framing.
// Both rows read both.

#include <snappy-stubs-public.h>
#include <snappy.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>

#include "harness/codec.h"

namespace kbench::codecs {
namespace {

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
  SnappyCodec(CodecSpec spec, bool xerial) : Codec(spec), xerial_(xerial) {}

  Status Compress(ByteView in, ByteBuffer& out) override {
    const char* src = reinterpret_cast<const char*>(in.data());
    if (!xerial_) {
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

  bool xerial_;
};

class SnappyDirect final : public DirectCodec {
 public:
  std::size_t CompressBound(std::size_t n) const override { return snappy::MaxCompressedLength(n); }
  std::size_t Compress(ByteView in, std::uint8_t* out, std::size_t) override {
    std::size_t n = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(in.data()), in.size(),
                        reinterpret_cast<char*>(out), &n);
    return n;
  }
  std::size_t Decompress(ByteView in, std::uint8_t* out, std::size_t capacity) override {
    const char* src = reinterpret_cast<const char*>(in.data());
    std::size_t n = 0;
    if (!snappy::GetUncompressedLength(src, in.size(), &n) || n > capacity) return 0;
    return snappy::RawUncompress(src, in.size(), reinterpret_cast<char*>(out)) ? n : 0;
  }
};

}  // namespace

std::unique_ptr<Codec> MakeSnappy(const CodecSpec& spec) {
  return std::make_unique<SnappyCodec>(spec, false);
}
std::unique_ptr<Codec> MakeSnappyXerial(const CodecSpec& spec) {
  return std::make_unique<SnappyCodec>(spec, true);
}
std::unique_ptr<DirectCodec> MakeSnappyDirect(int) { return std::make_unique<SnappyDirect>(); }
// snappy exposes no runtime version query; this is the version of the headers built
// against (Debian ships matching headers and library).
std::string SnappyVersion() {
  return std::to_string(SNAPPY_MAJOR) + "." + std::to_string(SNAPPY_MINOR) + "." +
         std::to_string(SNAPPY_PATCHLEVEL);
}

}  // namespace kbench::codecs
