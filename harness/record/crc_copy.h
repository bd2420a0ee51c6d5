#pragma once

// Copy-and-CRC-32C in one pass, for building uncompressed v2 batches.
//
// Written by hand because no Debian-packaged library fuses a copy with CRC-32C: ISA-L only
// fuses copying for T10-DIF (crc16_t10dif_copy), zlib only for CRC-32 (IEEE). Copying the
// records into the batch and then running ISA-L's crc32_iscsi over them reads every byte
// twice; here each 64-byte block is loaded once, stored to the batch and folded into the
// CRC from the same register.
//
// The fused kernel (crc_copy_fused.h) folds four 512-bit lanes with VPCLMULQDQ (AVX-512;
// byte-masked moves and VBMI2 expand/compress for partial blocks) and finishes with the
// SSE4.2 crc32 instruction; it is picked at run time. On a CPU without
// those instructions the copier is memcpy followed by ISA-L's crc32_iscsi
// (kbench::record::Crc32c), giving the same results.

#include <cstddef>
#include <cstdint>

namespace kbench::record {

enum class Crc32cKernel {
  kAuto,      // the fused AVX-512 kernel when the CPU has it, else kPortable
  kPortable,  // memcpy + ISA-L's crc32_iscsi; forced by tests to cover the fallback
};

// Streaming CRC-32C over bytes appended in any number of pieces, each copied to its own
// destination. Pieces are joined in the order given, regardless of where they are copied,
// so the result is Crc32c() of their concatenation.
class Crc32cCopier {
 public:
  explicit Crc32cCopier(Crc32cKernel kernel = Crc32cKernel::kAuto);

  // Starts a new stream that continues from `crc`, a previous result (0 to start), with
  // Crc32c()'s meaning: after Reset(Crc32c(A)) and Append(B), Finish() == Crc32c(A || B).
  void Reset(std::uint32_t crc = 0);

  // Copies n bytes from src to dst (which must not overlap, as for memcpy) and adds them
  // to the stream.
  void Append(const void* src, std::size_t n, void* dst) { Append(0, 0, 0, src, n, dst); }

  // Adds ns <= 16 bytes passed in registers (byte i of lo | hi << 64 is byte i of the
  // piece), then n bytes from src, and copies both, in that order, to dst. For bytes the
  // caller has just computed, such as varints: writing them to memory and passing a pointer
  // would make the kernel's wide load wait for the caller's narrow stores to drain (a
  // failed store-to-load forward), and one call for both pieces loads and stores the
  // folding state once.
  void Append(std::uint64_t lo, std::uint64_t hi, std::size_t ns, const void* src, std::size_t n,
              void* dst);

  // Adds the pieces in order, copied back to back from dst on: what Append(lo, hi, ns, src,
  // n, dst) does for each in turn, but in one call that keeps the folding state in
  // registers across pieces. The v2 writer passes a piece per record (its computed prefix,
  // then its value), so a batch costs a few calls rather than one per record.
  struct Piece {  // no default member values: callers fill arrays of them per batch
    std::uint64_t lo;
    std::uint64_t hi;
    std::size_t ns;  // <= 16
    const void* src;
    std::size_t n;
  };
  void AppendPieces(const Piece* pieces, std::size_t count, void* dst);

  // CRC-32C of everything added since Reset. Does not end the stream: more bytes may
  // follow and Finish() may be called again.
  std::uint32_t Finish() const;

  // Bytes added since Reset.
  std::uint64_t size() const { return size_; }
  // Whether the fused AVX-512 kernel is in use (false: memcpy + ISA-L).
  bool fused() const { return fused_; }

 private:
  // The pieces a source yields (bool next(Piece&); false at the end), copied back to back
  // from dst on; returns the bytes added. Fused kernel only; defined in crc_copy_fused.h.
  template <class Source>
  std::uint64_t AppendFrom(Source&& next, void* dst);
  void AppendPortable(std::uint64_t lo, std::uint64_t hi, std::size_t ns, const void* src,
                      std::size_t n, void* dst);
  void AppendPortable(const void* src, std::size_t n, void* dst);

 public:
  // State of the fused kernel (crc_copy_fused.h), public only so that its free functions,
  // compiled for AVX-512, can take it. The four 512-bit folding lanes live in memory
  // between calls (not as __m512i) so this header needs no AVX-512 types. stage holds an
  // incomplete 64-byte block: blocks follow stream positions, not call boundaries.
  struct FusedState {
    alignas(64) std::uint8_t acc[256];
    alignas(64) std::uint8_t stage[64];
    std::size_t staged = 0;
    std::uint64_t blocks = 0;     // complete blocks so far; the lanes are unset while 0
    std::uint32_t init = 0;       // CRC register before the stream (~crc)
    std::uint32_t init_lane = 0;  // init * x^-32 mod P: where the lanes start from
  };

 private:
  FusedState fs_{};        // zeroed once, so no uninitialised byte is ever loaded
  std::uint32_t crc_ = 0;  // portable kernel: running Crc32c() result
  std::uint64_t size_ = 0;
  bool fused_ = false;
};

// CRC-32C of A || B from crc_a = Crc32c(A), crc_b = Crc32c(B) and len_b = |B|, as zlib's
// crc32_combine does for CRC-32. Uses PCLMULQDQ and the crc32 instruction when present;
// kPortable forces the bitwise arithmetic (for tests).
std::uint32_t Crc32cCombine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t len_b,
                            Crc32cKernel kernel = Crc32cKernel::kAuto);

}  // namespace kbench::record
