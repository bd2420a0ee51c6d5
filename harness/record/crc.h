#pragma once

// The two checksums of Kafka's record formats.
//   CRC-32  (IEEE, zlib's crc32): v0/v1 messages, over magic .. end of value.
//   CRC-32C (Castagnoli):          v2 record batches, over attributes .. end of batch.
// Both come from packaged libraries: CRC-32 from zlib, CRC-32C from Intel's ISA-L
// (libisal), which picks its fastest kernel (PCLMULQDQ / VPCLMULQDQ folding) at run time.

#include <cstddef>
#include <cstdint>

#include "harness/bytes.h"

namespace kbench::record {

std::uint32_t Crc32(ByteView data);

// `crc` is a previous result to continue from (0 to start), like zlib's crc32():
// Crc32c(B, Crc32c(A)) == Crc32c(A || B).
std::uint32_t Crc32c(ByteView data, std::uint32_t crc = 0);

}  // namespace kbench::record
