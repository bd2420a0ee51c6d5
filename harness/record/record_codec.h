#pragma once

// Compression as the record formats use it: one cached Codec per codec (so contexts are
// reused across batches) plus the one format quirk that is not the codec's business:
// lz4 frames written for magic 0 carry Kafka's wrong header checksum (KAFKA-3160).
// Kafka's compression codes (attribute bits 0-2) are the kafka_attribute of the codec rows
// (harness/codec_table.cc); the masks and bit positions are the readers' and writers'.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "harness/bytes.h"
#include "harness/codec.h"
#include "harness/status.h"

namespace kbench::record {

class RecordCodecs {
 public:
  // Compresses `in` into `out` as a producer of `magic` would.
  Status Compress(std::int8_t magic, const CodecSpec& spec, ByteView in, ByteBuffer& out);
  // Decompresses a batch's compressed section. Accepts raw and xerial snappy, and for
  // magic 0 lz4 both the KAFKA-3160 header checksum and the correct one.
  Status Decompress(std::int8_t magic, const CodecSpec& spec, ByteView in, ByteBuffer& out,
                    std::size_t max_out);

 private:
  StatusOr<Codec*> Get(const CodecSpec& spec);  // owned here, made on first use
  std::vector<std::unique_ptr<Codec>> codecs_;  // by codec row
  ByteBuffer lz4_fixed_;  // magic 0 lz4 input with its header checksum corrected
};

// LZ4 frame header checksums. `frame` starts with the frame magic; returns false when the
// frame descriptor is truncated or malformed. `hc_offset` receives the position of the
// header checksum byte.
// Kafka's compression code of lz4, whose magic 0 frames carry KAFKA-3160's checksum.
inline constexpr std::uint8_t kKafkaLz4Attribute = 3;

bool Lz4HeaderChecksums(ByteView frame, std::size_t* hc_offset, std::uint8_t* correct,
                        std::uint8_t* kafka3160);

}  // namespace kbench::record
