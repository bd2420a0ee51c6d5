#pragma once

// The two checksums of Kafka's record formats.
//   CRC-32  (IEEE, zlib's crc32): v0/v1 messages, over magic .. end of value.
//   CRC-32C (Castagnoli):          v2 record batches, over attributes .. end of batch.
// CRC-32C uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run time)
// and otherwise a portable table-driven implementation.

#include <cstddef>
#include <cstdint>

#include "harness/bytes.h"

namespace kbench::record {

std::uint32_t Crc32(ByteView data);

// `crc` is a previous result to continue from (0 to start), like zlib's crc32().
std::uint32_t Crc32c(ByteView data, std::uint32_t crc = 0);

// The two CRC-32C implementations, exposed so tests can check they agree and benchmarks
// can compare them. Crc32cHardware must only be called when HasHardwareCrc32c().
bool HasHardwareCrc32c();
std::uint32_t Crc32cHardware(ByteView data, std::uint32_t crc = 0);
std::uint32_t Crc32cPortable(ByteView data, std::uint32_t crc = 0);

}  // namespace kbench::record
