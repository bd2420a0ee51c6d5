// Codec "none": the bytes as they are (Kafka attribute 0).

#include <memory>
#include <string>

#include "harness/codec.h"

namespace kbench::codecs {
namespace {

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

}  // namespace

std::unique_ptr<Codec> MakeNone(const CodecSpec& spec) { return std::make_unique<NoneCodec>(spec); }

}  // namespace kbench::codecs
