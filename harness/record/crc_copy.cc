#include "harness/record/crc_copy.h"

#include <array>
#include <cstring>

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

#include "harness/bytes.h"
#include "harness/record/crc.h"

namespace kbench::record {

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
// standard CRC-32C is ~reg with I = ~0 (I = ~crc to continue from a previous result).

namespace {

constexpr std::uint32_t kPoly = 0x82F63B78;  // P, reflected, without x^32
constexpr std::uint32_t kOne = 0x80000000;   // the polynomial 1, reflected

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

// ---------------------------------------------------------------- combining
//
// Crc32c(A || B) = Crc32c(B) ^ Crc32c(A) * x^(8|B|) mod P (the ~ of both registers
// cancels), so combining is one multiplication by x^(8n). kShift[t][j] holds
// x^(8 * j * 256^t - 33) mod P: the power for byte t of n having value j, divided by x^33
// because the PCLMULQDQ multiply below leaves a factor x^33 (see MulModClmul).

using ShiftTable = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr ShiftTable MakeShiftTable() {
  ShiftTable t{};
  std::uint32_t base = XPow(8);  // x^(8 * 256^i) for byte i, by squaring 8 times per byte
  for (auto& row : t) {
    row[0] = XPow(-33);
    for (std::size_t j = 1; j < 256; ++j) row[j] = MulMod(row[j - 1], base);
    for (int s = 0; s < 8; ++s) base = MulMod(base, base);
  }
  return t;
}

constexpr ShiftTable kShift = MakeShiftTable();
constexpr std::uint32_t kX33 = XPow(33);

static_assert(kShift[0][5] == XPow(40 - 33));
static_assert(kShift[1][1] == XPow(8 * 256 - 33));

std::uint32_t ShiftPortable(std::uint32_t crc, std::uint64_t n) {
  for (int t = 0; n != 0; ++t, n >>= 8) {
    if (n & 0xFF) crc = MulMod(MulMod(crc, kShift[t][n & 0xFF]), kX33);
  }
  return crc;
}

// a * b * x^33 mod P. PCLMULQDQ of two reflected 32-bit values (powers 31 - i) yields a
// 63-bit product whose bit k is the power 62 - k; read as a reflected 64-bit value (powers
// 63 - k) that is a * b * x. The crc32 instruction on a 64-bit value v from register 0
// computes v * x^32 mod P.
__attribute__((target("pclmul,sse4.2"))) std::uint32_t MulModClmul(std::uint32_t a,
                                                                   std::uint32_t b) {
  __m128i p = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(a)),
                                   _mm_cvtsi32_si128(static_cast<int>(b)), 0x00);
  return static_cast<std::uint32_t>(
      _mm_crc32_u64(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(p))));
}

__attribute__((target("pclmul,sse4.2"))) std::uint32_t ShiftClmul(std::uint32_t crc,
                                                                  std::uint64_t n) {
  for (int t = 0; n != 0; ++t, n >>= 8) {
    if (n & 0xFF) crc = MulModClmul(crc, kShift[t][n & 0xFF]);
  }
  return crc;
}

bool HasClmul() {
  static const bool has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
  return has;
}

// ---------------------------------------------------------------- folding
//
// The fused kernel reads the stream in 64-byte blocks u_0, u_1, ... and keeps four 512-bit
// lanes: block j goes to lane j mod 4. Adding a block to a lane first moves the lane's
// contents four blocks (2048 bits) forward: each 128-bit part C = A x^64 + B (A: its first
// 8 bytes, B: the next 8) becomes A * (x^(D+64) mod P) + B * (x^D mod P), congruent to
// C * x^D and under 96 bits long, which is XORed with the new block. The 32-bit constants
// sit in the high half of a 64-bit PCLMULQDQ operand (a reflected 32-bit value shifted up
// by 32 is the same polynomial in 64 bits); the product of two reflected 64-bit operands
// comes out one power low (as in MulModClmul), so the constants are x^(D+63) and x^(D-1).
// Lanes are kept in rotating order: lane 3 always holds the latest block, lane 0 the one
// due next, so blocks can arrive one at a time across calls.
//
// At the end the lanes hold, modulo P, the stream so far as lane0 x^1536 + lane1 x^1024 +
// lane2 x^512 + lane3; folding lanes 0-2 by those distances, then the four 128-bit parts
// of the result by 384/256/128 bits, leaves a 128-bit R congruent to the stream (with the
// initial register XORed into its first bytes, as above). Its CRC register is then
// R * x^32 mod P: two crc32 instructions from register 0, which the remaining (< 64)
// bytes continue.

struct FoldPair {
  std::uint64_t first;   // multiplies A, the first 8 bytes of a 128-bit part
  std::uint64_t second;  // multiplies B, the next 8
};

constexpr FoldPair FoldBy(long d) {
  return {std::uint64_t{XPow(d + 63)} << 32, std::uint64_t{XPow(d - 1)} << 32};
}

constexpr FoldPair kFold2048 = FoldBy(2048);
constexpr FoldPair kFold1536 = FoldBy(1536);
constexpr FoldPair kFold1024 = FoldBy(1024);
constexpr FoldPair kFold512 = FoldBy(512);
constexpr FoldPair kFold384 = FoldBy(384);
constexpr FoldPair kFold256 = FoldBy(256);
constexpr FoldPair kFold128 = FoldBy(128);

#define KBENCH_FUSED_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vbmi2,vpclmulqdq,pclmul,sse4.2")))

// (set_epi64 rather than broadcast_i32x4 or extracti32x4 below: GCC 12 warns about the
// _mm512_undefined_epi32 inside those.)
KBENCH_FUSED_TARGET inline __m512i Broadcast(FoldPair k) {
  auto f = static_cast<long long>(k.first);
  auto s = static_cast<long long>(k.second);
  return _mm512_set_epi64(s, f, s, f, s, f, s, f);
}

KBENCH_FUSED_TARGET inline __m128i Part(__m512i v, int i) {
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
KBENCH_FUSED_TARGET inline __m512i Fold(__m512i a, __m512i k) {
  return _mm512_xor_si512(_mm512_clmulepi64_epi128(a, k, 0x00),
                          _mm512_clmulepi64_epi128(a, k, 0x11));
}

// Fold(a, k) ^ d in one three-way XOR.
KBENCH_FUSED_TARGET inline __m512i FoldXor(__m512i a, __m512i k, __m512i d) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
                                   _mm512_clmulepi64_epi128(a, k, 0x11), d, 0x96);
}

// Adds one block: lane 0 takes it, then the lanes rotate so lane 3 holds it.
KBENCH_FUSED_TARGET inline void Step(__m512i& a0, __m512i& a1, __m512i& a2, __m512i& a3, __m512i k,
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
KBENCH_FUSED_TARGET inline __m512i LoadState(const std::uint8_t* p) { return _mm512_load_si512(p); }
KBENCH_FUSED_TARGET inline void StoreState(std::uint8_t* p, __m512i v) { _mm512_store_si512(p, v); }

// Bits [from, to) of a 64-bit mask, 0 <= from <= to <= 64.
inline __mmask64 MaskBits(std::size_t from, std::size_t to) {
  std::uint64_t below_to = to >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << to) - 1;
  return below_to & ~((std::uint64_t{1} << from) - 1);
}

// One call adds `ns` <= 16 bytes passed in registers (lo, hi), then n bytes from src, and
// copies both to dst. The open block is moved with byte-masked loads and stores of whole
// vectors (expand places register bytes at its end, compress moves what did not fit to the
// start of the next): no memcpy calls, which would spill the lanes and need vzeroupper.
// Masked-off bytes are neither read nor written, so `src - staged` and `dst - staged` only
// address bytes of the piece.
KBENCH_FUSED_TARGET void FusedAppend(FusedState& s, std::uint64_t lo, std::uint64_t hi,
                                     std::size_t ns, const std::uint8_t* src, std::size_t n,
                                     std::uint8_t* dst) {
  std::size_t staged = s.staged;
  __m512i stage = LoadState(s.stage);
  bool full = false;  // stage is a complete block, and spill starts the next one
  __m512i spill = _mm512_setzero_si512();
  if (ns > 0) {
    __m512i v = _mm512_inserti32x4(
        _mm512_setzero_si512(),
        _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo)), 0);
    _mm512_mask_storeu_epi8(dst, MaskBits(0, ns), v);
    dst += ns;
    stage = _mm512_mask_expand_epi8(stage, MaskBits(staged, staged + ns), v);
    if (staged + ns >= 64) {
      full = true;
      spill = _mm512_maskz_compress_epi8(MaskBits(64 - staged, ns), v);
    }
    staged = (staged + ns) % 64;
  }
  if (!full && staged + n < 64) {  // the open block stays open
    if (n > 0) {
      __mmask64 m = MaskBits(staged, staged + n);
      stage = _mm512_mask_loadu_epi8(stage, m, src - staged);
      _mm512_mask_storeu_epi8(dst - staged, m, stage);
    }
    StoreState(s.stage, stage);
    s.staged = staged + n;
    return;
  }

  const __m512i k = Broadcast(kFold2048);
  __m512i a0, a1, a2, a3;
  // The stream's first block carries the initial register in its first four bytes; the
  // lanes start as if zero bytes came first, which changes nothing.
  __m512i first = _mm512_setzero_si512();
  if (s.folded) {
    a0 = LoadState(s.acc);
    a1 = LoadState(s.acc + 64);
    a2 = LoadState(s.acc + 128);
    a3 = LoadState(s.acc + 192);
  } else {
    a0 = a1 = a2 = a3 = _mm512_setzero_si512();
    first = _mm512_maskz_set1_epi32(1, static_cast<int>(s.reg));
  }
  if (full) {
    Step(a0, a1, a2, a3, k, _mm512_xor_si512(stage, first));
    first = _mm512_setzero_si512();
    stage = spill;
  }
  if (staged > 0) {
    if (staged + n < 64) {  // only after a full block: the rest stays open
      if (n > 0) {
        __mmask64 m = MaskBits(staged, staged + n);
        stage = _mm512_mask_loadu_epi8(stage, m, src - staged);
        _mm512_mask_storeu_epi8(dst - staged, m, stage);
        staged += n;
        n = 0;
      }
    } else {  // complete the open block from src
      __mmask64 m = MaskBits(staged, 64);
      __m512i d = _mm512_mask_loadu_epi8(stage, m, src - staged);
      _mm512_mask_storeu_epi8(dst - staged, m, d);
      std::size_t take = 64 - staged;
      src += take;
      dst += take;
      n -= take;
      staged = 0;
      Step(a0, a1, a2, a3, k, _mm512_xor_si512(d, first));
      first = _mm512_setzero_si512();
    }
  } else if (!s.folded && !full) {  // n >= 64 here
    __m512i d = _mm512_loadu_si512(src);
    _mm512_storeu_si512(dst, d);
    src += 64;
    dst += 64;
    n -= 64;
    Step(a0, a1, a2, a3, k, _mm512_xor_si512(d, first));
  }
  s.folded = true;
  for (; n >= 256; n -= 256) {
    __m512i d0 = _mm512_loadu_si512(src);
    __m512i d1 = _mm512_loadu_si512(src + 64);
    __m512i d2 = _mm512_loadu_si512(src + 128);
    __m512i d3 = _mm512_loadu_si512(src + 192);
    _mm512_storeu_si512(dst, d0);
    _mm512_storeu_si512(dst + 64, d1);
    _mm512_storeu_si512(dst + 128, d2);
    _mm512_storeu_si512(dst + 192, d3);
    src += 256;
    dst += 256;
    // Four Steps, with the rotation written out: after four it is back where it started.
    a0 = FoldXor(a0, k, d0);
    a1 = FoldXor(a1, k, d1);
    a2 = FoldXor(a2, k, d2);
    a3 = FoldXor(a3, k, d3);
  }
  for (; n >= 64; n -= 64) {
    __m512i d = _mm512_loadu_si512(src);
    _mm512_storeu_si512(dst, d);
    src += 64;
    dst += 64;
    Step(a0, a1, a2, a3, k, d);
  }
  if (n > 0) {  // opens the next block
    __mmask64 m = MaskBits(0, n);
    stage = _mm512_maskz_loadu_epi8(m, src);
    _mm512_mask_storeu_epi8(dst, m, stage);
    staged = n;
  }
  StoreState(s.acc, a0);
  StoreState(s.acc + 64, a1);
  StoreState(s.acc + 128, a2);
  StoreState(s.acc + 192, a3);
  StoreState(s.stage, stage);
  s.staged = staged;
}

// FusedAppend over many pieces, stored back to back at dst, with the lanes and the open
// block held in registers from the first piece to the last. Same steps as FusedAppend once
// a block has been folded; before that (the stream's first block carries the initial
// register) pieces go through FusedAppend.
KBENCH_FUSED_TARGET void FusedAppendPieces(FusedState& s, const Crc32cCopier::Piece* pieces,
                                           std::size_t count, std::uint8_t* dst) {
  std::size_t i = 0;
  for (; i < count && !s.folded; ++i) {
    const Crc32cCopier::Piece& p = pieces[i];
    FusedAppend(s, p.lo, p.hi, p.ns, static_cast<const std::uint8_t*>(p.src), p.n, dst);
    dst += p.ns + p.n;
  }
  if (i == count) return;
  const __m512i k = Broadcast(kFold2048);
  __m512i a0 = LoadState(s.acc);
  __m512i a1 = LoadState(s.acc + 64);
  __m512i a2 = LoadState(s.acc + 128);
  __m512i a3 = LoadState(s.acc + 192);
  __m512i stage = LoadState(s.stage);
  std::size_t staged = s.staged;
  for (; i < count; ++i) {
    const Crc32cCopier::Piece& p = pieces[i];
    const auto* src = static_cast<const std::uint8_t*>(p.src);
    std::size_t n = p.n;
    if (p.ns > 0) {  // register bytes: into the open block, and out if they complete it
      const std::size_t ns = p.ns;
      __m512i v = _mm512_inserti32x4(
          _mm512_setzero_si512(),
          _mm_set_epi64x(static_cast<long long>(p.hi), static_cast<long long>(p.lo)), 0);
      _mm512_mask_storeu_epi8(dst, MaskBits(0, ns), v);
      dst += ns;
      stage = _mm512_mask_expand_epi8(stage, MaskBits(staged, staged + ns), v);
      if (staged + ns >= 64) {
        Step(a0, a1, a2, a3, k, stage);
        stage = _mm512_maskz_compress_epi8(MaskBits(64 - staged, ns), v);
      }
      staged = (staged + ns) % 64;
    }
    if (staged + n < 64) {  // the open block stays open
      if (n > 0) {
        __mmask64 m = MaskBits(staged, staged + n);
        stage = _mm512_mask_loadu_epi8(stage, m, src - staged);
        _mm512_mask_storeu_epi8(dst - staged, m, stage);
        staged += n;
        dst += n;
      }
      continue;
    }
    if (staged > 0) {  // complete the open block from src
      __mmask64 m = MaskBits(staged, 64);
      __m512i d = _mm512_mask_loadu_epi8(stage, m, src - staged);
      _mm512_mask_storeu_epi8(dst - staged, m, d);
      std::size_t take = 64 - staged;
      src += take;
      dst += take;
      n -= take;
      Step(a0, a1, a2, a3, k, d);
    }
    for (; n >= 256; n -= 256) {
      __m512i d0 = _mm512_loadu_si512(src);
      __m512i d1 = _mm512_loadu_si512(src + 64);
      __m512i d2 = _mm512_loadu_si512(src + 128);
      __m512i d3 = _mm512_loadu_si512(src + 192);
      _mm512_storeu_si512(dst, d0);
      _mm512_storeu_si512(dst + 64, d1);
      _mm512_storeu_si512(dst + 128, d2);
      _mm512_storeu_si512(dst + 192, d3);
      src += 256;
      dst += 256;
      a0 = FoldXor(a0, k, d0);
      a1 = FoldXor(a1, k, d1);
      a2 = FoldXor(a2, k, d2);
      a3 = FoldXor(a3, k, d3);
    }
    for (; n >= 64; n -= 64) {
      __m512i d = _mm512_loadu_si512(src);
      _mm512_storeu_si512(dst, d);
      src += 64;
      dst += 64;
      Step(a0, a1, a2, a3, k, d);
    }
    // Opens the next block (empty when n is 0).
    __mmask64 m = MaskBits(0, n);
    stage = _mm512_maskz_loadu_epi8(m, src);
    _mm512_mask_storeu_epi8(dst, m, stage);
    staged = n;
    dst += n;
  }
  StoreState(s.acc, a0);
  StoreState(s.acc + 64, a1);
  StoreState(s.acc + 128, a2);
  StoreState(s.acc + 192, a3);
  StoreState(s.stage, stage);
  s.staged = staged;
}

KBENCH_FUSED_TARGET std::uint32_t FusedFinish(const FusedState& s) {
  std::uint64_t reg = s.reg;
  if (s.folded) {
    __m512i a0 = LoadState(s.acc);
    __m512i a1 = LoadState(s.acc + 64);
    __m512i a2 = LoadState(s.acc + 128);
    __m512i a3 = LoadState(s.acc + 192);
    __m512i t =
        _mm512_ternarylogic_epi64(Fold(a0, Broadcast(kFold1536)), Fold(a1, Broadcast(kFold1024)),
                                  FoldXor(a2, Broadcast(kFold512), a3), 0x96);
    // Parts 0-2 of t by 384/256/128 bits; part 3 gets zero constants and so drops out of u.
    const __m512i parts = _mm512_set_epi64(
        0, 0, static_cast<long long>(kFold128.second), static_cast<long long>(kFold128.first),
        static_cast<long long>(kFold256.second), static_cast<long long>(kFold256.first),
        static_cast<long long>(kFold384.second), static_cast<long long>(kFold384.first));
    __m512i u = Fold(t, parts);
    __m128i r =
        _mm_xor_si128(_mm_xor_si128(Part(u, 0), Part(u, 1)), _mm_xor_si128(Part(u, 2), Part(t, 3)));
    reg = _mm_crc32_u64(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(r)));
    reg = _mm_crc32_u64(reg, static_cast<std::uint64_t>(_mm_extract_epi64(r, 1)));
  }
  const std::uint8_t* p = s.stage;
  std::size_t n = s.staged;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    reg = _mm_crc32_u64(reg, v);
  }
  auto r32 = static_cast<std::uint32_t>(reg);
  for (; n > 0; --n, ++p) r32 = _mm_crc32_u8(r32, *p);
  return ~r32;
}

#undef KBENCH_FUSED_TARGET

bool HasFusedKernel() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vbmi2") &&
                          __builtin_cpu_supports("vpclmulqdq") &&
                          __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
  return has;
}

}  // namespace

// ---------------------------------------------------------------- Crc32cCopier

Crc32cCopier::Crc32cCopier(Crc32cKernel kernel)
    : fused_(kernel == Crc32cKernel::kAuto && HasFusedKernel()) {
  Reset();
}

void Crc32cCopier::Reset(std::uint32_t crc) {
  fs_.staged = 0;
  fs_.folded = false;
  fs_.reg = ~crc;
  crc_ = crc;
  size_ = 0;
}

void Crc32cCopier::AppendFused(std::uint64_t lo, std::uint64_t hi, std::size_t ns, const void* src,
                               std::size_t n, void* dst) {
  size_ += ns + n;
  FusedAppend(fs_, lo, hi, ns, static_cast<const std::uint8_t*>(src), n,
              static_cast<std::uint8_t*>(dst));
}

void Crc32cCopier::AppendPortable(const void* src, std::size_t n, void* dst) {
  size_ += n;
  if (n == 0) return;
  std::memcpy(dst, src, n);
  crc_ = Crc32c({static_cast<const std::uint8_t*>(src), n}, crc_);
}

void Crc32cCopier::AppendPortable(std::uint64_t lo, std::uint64_t hi, std::size_t ns,
                                  const void* src, std::size_t n, void* dst) {
  std::uint8_t bytes[16];
  std::memcpy(bytes, &lo, 8);
  std::memcpy(bytes + 8, &hi, 8);
  AppendPortable(bytes, ns, dst);
  AppendPortable(src, n, static_cast<std::uint8_t*>(dst) + ns);
}

void Crc32cCopier::AppendPieces(const Piece* pieces, std::size_t count, void* dst) {
  auto* out = static_cast<std::uint8_t*>(dst);
  if (fused_) {
    for (std::size_t i = 0; i < count; ++i) size_ += pieces[i].ns + pieces[i].n;
    FusedAppendPieces(fs_, pieces, count, out);
    return;
  }
  for (std::size_t i = 0; i < count; ++i) {
    const Piece& p = pieces[i];
    AppendPortable(p.lo, p.hi, p.ns, p.src, p.n, out);
    out += p.ns + p.n;
  }
}

std::uint32_t Crc32cCopier::Finish() const { return fused_ ? FusedFinish(fs_) : crc_; }

std::uint32_t Crc32cCombine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t len_b,
                            Crc32cKernel kernel) {
  std::uint32_t shifted = kernel == Crc32cKernel::kAuto && HasClmul() ? ShiftClmul(crc_a, len_b)
                                                                      : ShiftPortable(crc_a, len_b);
  return shifted ^ crc_b;
}

}  // namespace kbench::record
