#pragma once

// The fused copy + CRC-32C kernel behind Crc32cCopier, as one template over where its
// pieces come from (one piece for Append, an array for AppendPieces), so both share the
// same code. Include only from crc_copy.cc; it runs only when Crc32cCopier::fused() is
// true (the CPU has AVX-512 and VPCLMULQDQ).
//
// Hand-written: see crc_copy.h for why no packaged library does this.

// GCC 12 warns inside its own AVX-512 headers when inlined (_mm512_undefined_*, GCC bug
// 105593, fixed in 13); the warning points into the header, so it is silenced for it only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "harness/record/crc_copy.h"

namespace kbench::record::crc32c_fused {

// ---------------------------------------------------------------- arithmetic mod P
//
// CRC-32C is arithmetic on polynomials over GF(2) modulo P = x^32 + 0x1EDC6F41 (normal
// form). Like the crc32 instruction and ISA-L, all values here are bit-reflected: in a
// 32-bit value, bit i is the coefficient of x^(31-i), so 0x80000000 is 1 and the reflected
// polynomial is 0x82F63B78. In data, bit 0 of the first byte is the highest power.
//
// The raw CRC register after message M (8L bits) from initial register I is
//   reg = (I * x^(8L) + M * x^32) mod P,
// which equals (M' * x^32) mod P for M' = M with I XORed into its first four bytes; the
// standard CRC-32C is ~reg with I = ~0 (I = ~crc to continue from a previous result). The
// crc32 instruction computes exactly this register, 8 bytes at a time.

inline constexpr std::uint32_t kPoly = 0x82F63B78;  // P, reflected, without x^32
inline constexpr std::uint32_t kOne = 0x80000000;   // the polynomial 1, reflected

// r * x mod P: shifting right raises every power by one; the x^32 that falls off bit 0
// is replaced by P - x^32.
constexpr std::uint32_t MulX(std::uint32_t r) { return (r >> 1) ^ ((r & 1) ? kPoly : 0); }

// r / x mod P, the inverse of MulX (x is invertible since P has a constant term). MulX
// sets bit 31 exactly when it added kPoly, whose bit 31 is set.
constexpr std::uint32_t DivX(std::uint32_t r) {
  return (r & kOne) ? ((r ^ kPoly) << 1) | 1 : r << 1;
}

// x^e mod P for any integer e (negative: divisions by x).
constexpr std::uint32_t XPow(long e) {
  std::uint32_t r = kOne;
  for (; e > 0; --e) r = MulX(r);
  for (; e < 0; ++e) r = DivX(r);
  return r;
}

// a * b mod P, bit by bit: b * x^k for each power x^k present in a (bit 31 - k).
constexpr std::uint32_t MulMod(std::uint32_t a, std::uint32_t b) {
  std::uint32_t p = 0;
  for (int k = 0; k < 32; ++k) {
    if (a & (kOne >> k)) p ^= b;
    b = MulX(b);
  }
  return p;
}

static_assert(MulX(DivX(0x12345678)) == 0x12345678);
static_assert(MulMod(XPow(40), XPow(-33)) == XPow(7));

// ---------------------------------------------------------------- the kernel's plan
//
// The stream is read in 64-byte blocks at stream positions (not call or piece boundaries;
// an incomplete block waits in `stage`), and four 512-bit lanes take them in turn. Adding a
// block to a lane first moves the lane's contents four blocks (2048 bits) forward: each
// 128-bit part C = A x^64 + B (A: its first 8 bytes, B: the next 8) becomes
// A * (x^(D+64) mod P) + B * (x^D mod P), congruent to C * x^D and under 96 bits long, which
// is XORed with the new block. The 32-bit constants sit in the high half of a 64-bit
// PCLMULQDQ operand (a reflected 32-bit value shifted up by 32 is the same polynomial in 64
// bits); the product of two reflected 64-bit operands comes out one power low, so the
// constants are x^(D+63) and x^(D-1). Lanes are kept in rotating order: lane 3 always holds
// the latest block, lane 0 the one due next, so blocks can arrive one at a time.
//
// The initial register I must add I * x^(8L) for a stream of L bytes. The lanes start as
// the four blocks before the stream, zero but for the last four bytes of the one just
// before it, which hold I * x^-32: L bytes follow those, so after the final * x^32 they
// add exactly that. No block needs special handling for it.
//
// (Handing one block in three to the crc32 instruction, so that the integer ports share
// the work, measured no faster on AMD Zen 4: there crc32 and VPCLMULQDQ contend.)

struct FoldPair {
  std::uint64_t first;   // multiplies A, the first 8 bytes of a 128-bit part
  std::uint64_t second;  // multiplies B, the next 8
};

constexpr FoldPair FoldBy(long d) {
  return {std::uint64_t{XPow(d + 63)} << 32, std::uint64_t{XPow(d - 1)} << 32};
}

inline constexpr FoldPair kFoldLane = FoldBy(4 * 512);

#define KBENCH_FUSED_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vbmi2,vpclmulqdq,pclmul,sse4.2")))
// The kernel's pieces must inline into one function, or its registers go through memory.
#define KBENCH_FUSED_INLINE KBENCH_FUSED_TARGET inline __attribute__((always_inline))

// (set_epi64 rather than broadcast_i32x4 or extracti32x4 below: GCC 12 warns about the
// _mm512_undefined_epi32 inside those.)
KBENCH_FUSED_INLINE __m512i Broadcast(FoldPair k) {
  auto f = static_cast<long long>(k.first);
  auto s = static_cast<long long>(k.second);
  return _mm512_set_epi64(s, f, s, f, s, f, s, f);
}

KBENCH_FUSED_INLINE __m128i Part(__m512i v, int i) {
  switch (i) {
    case 0:
      return _mm512_maskz_extracti32x4_epi32(0xF, v, 0);
    case 1:
      return _mm512_maskz_extracti32x4_epi32(0xF, v, 1);
    case 2:
      return _mm512_maskz_extracti32x4_epi32(0xF, v, 2);
    default:
      return _mm512_maskz_extracti32x4_epi32(0xF, v, 3);
  }
}

// a moved forward by the distance of k (each 128-bit part separately).
KBENCH_FUSED_INLINE __m512i Fold(__m512i a, __m512i k) {
  return _mm512_xor_si512(_mm512_clmulepi64_epi128(a, k, 0x00),
                          _mm512_clmulepi64_epi128(a, k, 0x11));
}

// Fold(a, k) ^ d in one three-way XOR.
KBENCH_FUSED_INLINE __m512i FoldXor(__m512i a, __m512i k, __m512i d) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
                                   _mm512_clmulepi64_epi128(a, k, 0x11), d, 0x96);
}

// Adds one block: lane 0 takes it, then the lanes rotate so lane 3 holds it.
KBENCH_FUSED_INLINE void Step(__m512i& a0, __m512i& a1, __m512i& a2, __m512i& a3, __m512i k,
                              __m512i d) {
  __m512i f = FoldXor(a0, k, d);
  a0 = a1;
  a1 = a2;
  a2 = a3;
  a3 = f;
}

using FusedState = Crc32cCopier::FusedState;

// The state kept between calls (lanes, open block), always moved as whole 64-byte vectors
// so that a load in the next call is forwarded from the store of this one.
KBENCH_FUSED_INLINE __m512i LoadState(const std::uint8_t* p) { return _mm512_load_si512(p); }
KBENCH_FUSED_INLINE void StoreState(std::uint8_t* p, __m512i v) { _mm512_store_si512(p, v); }

// Bits [from, to) of a 64-bit mask, 0 <= from <= to <= 64.
inline __mmask64 MaskBits(std::size_t from, std::size_t to) {
  std::uint64_t below_to = to >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << to) - 1;
  return below_to & ~((std::uint64_t{1} << from) - 1);
}

// The kernel's registers during one call.
struct Regs {
  __m512i a0, a1, a2, a3;  // the lanes
  __m512i stage;           // the open block; bytes [staged, 64) are not yet set
  std::size_t staged;
};

// Copies and adds n bytes from src, at the stream position after the open block.
KBENCH_FUSED_INLINE void AddBytes(Regs& g, __m512i k, const std::uint8_t* src, std::size_t n,
                                  std::uint8_t*& dst) {
  std::size_t staged = g.staged;
  if (staged + n < 64) {  // the open block stays open
    if (n > 0) {
      // Masked-off bytes are neither read nor written, so `src - staged` and `dst - staged`
      // only address bytes of the piece.
      __mmask64 m = MaskBits(staged, staged + n);
      g.stage = _mm512_mask_loadu_epi8(g.stage, m, src - staged);
      _mm512_mask_storeu_epi8(dst - staged, m, g.stage);
      g.staged = staged + n;
      dst += n;
    }
    return;
  }
  if (staged > 0) {  // complete the open block from src
    __mmask64 m = MaskBits(staged, 64);
    __m512i d = _mm512_mask_loadu_epi8(g.stage, m, src - staged);
    _mm512_mask_storeu_epi8(dst - staged, m, d);
    std::size_t take = 64 - staged;
    src += take;
    dst += take;
    n -= take;
    Step(g.a0, g.a1, g.a2, g.a3, k, d);
  }
  for (; n >= 256; n -= 256, src += 256, dst += 256) {
    __m512i d0 = _mm512_loadu_si512(src);
    __m512i d1 = _mm512_loadu_si512(src + 64);
    __m512i d2 = _mm512_loadu_si512(src + 128);
    __m512i d3 = _mm512_loadu_si512(src + 192);
    _mm512_storeu_si512(dst, d0);
    _mm512_storeu_si512(dst + 64, d1);
    _mm512_storeu_si512(dst + 128, d2);
    _mm512_storeu_si512(dst + 192, d3);
    // Four Steps, with the rotation written out: after four it is back where it started.
    g.a0 = FoldXor(g.a0, k, d0);
    g.a1 = FoldXor(g.a1, k, d1);
    g.a2 = FoldXor(g.a2, k, d2);
    g.a3 = FoldXor(g.a3, k, d3);
  }
  for (; n >= 64; n -= 64, src += 64, dst += 64) {
    __m512i d = _mm512_loadu_si512(src);
    _mm512_storeu_si512(dst, d);
    Step(g.a0, g.a1, g.a2, g.a3, k, d);
  }
  // Opens the next block (empty when n is 0).
  __mmask64 m = MaskBits(0, n);
  g.stage = _mm512_maskz_loadu_epi8(m, src);
  _mm512_mask_storeu_epi8(dst, m, g.stage);
  g.staged = n;
  dst += n;
}

// Adds ns <= 16 bytes passed in registers (byte i of lo | hi << 64 is byte i). They go
// into the open block with a byte expand, and what does not fit opens the next one
// (compress): no memory round trip, which would make the next wide load wait for narrow
// stores.
KBENCH_FUSED_INLINE void AddRegisterBytes(Regs& g, __m512i k, std::uint64_t lo, std::uint64_t hi,
                                          std::size_t ns, std::uint8_t*& dst) {
  __m512i v =
      _mm512_inserti32x4(_mm512_setzero_si512(),
                         _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo)), 0);
  _mm512_mask_storeu_epi8(dst, MaskBits(0, ns), v);
  dst += ns;
  const std::size_t staged = g.staged;
  g.stage = _mm512_mask_expand_epi8(g.stage, MaskBits(staged, staged + ns), v);
  if (staged + ns >= 64) {
    Step(g.a0, g.a1, g.a2, g.a3, k, g.stage);
    g.stage = _mm512_maskz_compress_epi8(MaskBits(64 - staged, ns), v);
  }
  g.staged = (staged + ns) % 64;
}

// Copies and adds the pieces `next` yields (bool next(Crc32cCopier::Piece&), false at the
// end), back to back from dst on, keeping the lanes and the open block in registers from
// the first piece to the last. Returns the number of bytes added.
template <class Source>
KBENCH_FUSED_TARGET std::uint64_t Copy(FusedState& s, Source& next, std::uint8_t* dst) {
  const __m512i k = Broadcast(kFoldLane);
  Regs g;
  if (s.blocks == 0) {  // the four blocks before the stream: see the plan above
    g.a0 = g.a1 = g.a2 = _mm512_setzero_si512();
    g.a3 = _mm512_maskz_set1_epi32(std::uint16_t{1} << 15, static_cast<int>(s.init_lane));
  } else {
    g.a0 = LoadState(s.acc);
    g.a1 = LoadState(s.acc + 64);
    g.a2 = LoadState(s.acc + 128);
    g.a3 = LoadState(s.acc + 192);
  }
  g.stage = LoadState(s.stage);
  g.staged = s.staged;
  std::uint64_t added = 0;
  Crc32cCopier::Piece p;
  while (next(p)) {
    added += p.ns + p.n;
    if (p.ns > 0) AddRegisterBytes(g, k, p.lo, p.hi, p.ns, dst);
    AddBytes(g, k, static_cast<const std::uint8_t*>(p.src), p.n, dst);
  }
  StoreState(s.acc, g.a0);
  StoreState(s.acc + 64, g.a1);
  StoreState(s.acc + 128, g.a2);
  StoreState(s.acc + 192, g.a3);
  StoreState(s.stage, g.stage);
  s.blocks = (s.blocks * 64 + s.staged + added) / 64;
  s.staged = g.staged;
  return added;
}

}  // namespace kbench::record::crc32c_fused

namespace kbench::record {

template <class Source>
std::uint64_t Crc32cCopier::AppendFrom(Source&& next, void* dst) {
  std::uint64_t added = crc32c_fused::Copy(fs_, next, static_cast<std::uint8_t*>(dst));
  size_ += added;
  return added;
}

}  // namespace kbench::record
