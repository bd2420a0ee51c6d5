#include "harness/record/crc_copy.h"

#include <array>
#include <cassert>
#include <cstring>

#include "harness/bytes.h"
#include "harness/record/crc.h"
#include "harness/record/crc_copy_fused.h"

namespace kbench::record {

namespace {

using crc32c_fused::MulMod;
using crc32c_fused::XPow;

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

// ---------------------------------------------------------------- finishing
//
// The lanes hold, modulo P, the stream so far as lane0 x^1536 + lane1 x^1024 + lane2 x^512
// + lane3; folding lanes 0-2 by those distances, then the four 128-bit parts of the result
// by 384/256/128 bits, leaves a 128-bit R congruent to the stream (the initial register
// included, see crc_copy_fused.h). Its CRC register is then R * x^32 mod P: two crc32
// instructions from register 0, which the remaining (< 64) bytes continue.

using crc32c_fused::Broadcast;
using crc32c_fused::Fold;
using crc32c_fused::FoldBy;
using crc32c_fused::FoldPair;
using crc32c_fused::FoldXor;
using crc32c_fused::LoadState;
using crc32c_fused::Part;

constexpr FoldPair kFold1536 = FoldBy(1536);
constexpr FoldPair kFold1024 = FoldBy(1024);
constexpr FoldPair kFold512 = FoldBy(512);
constexpr FoldPair kFold384 = FoldBy(384);
constexpr FoldPair kFold256 = FoldBy(256);
constexpr FoldPair kFold128 = FoldBy(128);
constexpr std::uint32_t kXMinus65 = XPow(-65);  // MulModClmul(a, it) = a * x^-32

KBENCH_FUSED_TARGET std::uint32_t FusedFinish(const Crc32cCopier::FusedState& s) {
  std::uint64_t reg = s.init;
  if (s.blocks > 0) {
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
  fs_.blocks = 0;
  fs_.init = ~crc;
  if (fused_) fs_.init_lane = MulModClmul(fs_.init, kXMinus65);
  crc_ = crc;
  size_ = 0;
}

void Crc32cCopier::Append(std::uint64_t lo, std::uint64_t hi, std::size_t ns, const void* src,
                          std::size_t n, void* dst) {
  assert(ns <= 16);
  if (!fused_) {
    AppendPortable(lo, hi, ns, src, n, dst);
    return;
  }
  bool given = false;
  AppendFrom(
      [&](Piece& p) {
        if (given) return false;
        p = {lo, hi, ns, src, n};
        given = true;
        return true;
      },
      dst);
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
    const Piece* end = pieces + count;
    AppendFrom(
        [&](Piece& p) {
          if (pieces == end) return false;
          p = *pieces++;
          return true;
        },
        out);
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
