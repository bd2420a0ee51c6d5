#include "harness/record/crc_copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness/bytes.h"
#include "harness/record/crc.h"
#include "harness/record/reader.h"
#include "harness/record/record.h"
#include "harness/record/wire.h"
#include "harness/record/writer.h"

// The oracle is ISA-L's Crc32c (itself checked against a bitwise definition in crc_test).
// Every check runs on both kernels: the fused one (when this CPU has it) and the portable
// memcpy + ISA-L fallback.

namespace kbench::record {
namespace {

std::vector<std::uint8_t> RandomBytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> data(n);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  return data;
}

class Crc32cCopierTest : public ::testing::TestWithParam<Crc32cKernel> {};

// Copies data[0..n) (at src_off in its buffer) to dst_off of a guarded buffer, in Append
// calls cut at the given points, and checks the CRC, the copy, and that nothing around the
// copy was written.
void CheckCopy(Crc32cKernel kernel, const std::vector<std::uint8_t>& data, std::size_t src_off,
               std::size_t dst_off, std::vector<std::size_t> cuts, std::uint32_t start_crc = 0) {
  const std::size_t n = data.size();
  constexpr std::size_t kGuard = 64;
  constexpr std::uint8_t kFill = 0xA5;
  // Fresh heap buffers so ASan sees any access outside them.
  std::vector<std::uint8_t> src(src_off + n);
  if (n > 0) std::memcpy(src.data() + src_off, data.data(), n);
  std::vector<std::uint8_t> dst(kGuard + dst_off + n + kGuard, kFill);
  std::uint8_t* out = dst.data() + kGuard + dst_off;

  Crc32cCopier copier(kernel);
  copier.Reset(start_crc);
  std::sort(cuts.begin(), cuts.end());
  std::size_t at = 0;
  cuts.push_back(n);
  for (std::size_t cut : cuts) {
    copier.Append(src.data() + src_off + at, cut - at, out + at);
    at = cut;
  }
  const std::string where = "n=" + std::to_string(n) + " src_off=" + std::to_string(src_off) +
                            " dst_off=" + std::to_string(dst_off) +
                            " pieces=" + std::to_string(cuts.size());
  ASSERT_EQ(copier.Finish(), Crc32c(data, start_crc)) << where;
  ASSERT_EQ(copier.size(), n) << where;
  ASSERT_TRUE(std::equal(data.begin(), data.end(), out)) << where;
  for (std::size_t i = 0; i < kGuard + dst_off; ++i)
    ASSERT_EQ(dst[i], kFill) << where << " before, at " << i;
  for (std::size_t i = kGuard + dst_off + n; i < dst.size(); ++i)
    ASSERT_EQ(dst[i], kFill) << where << " after";
}

TEST_P(Crc32cCopierTest, EveryLengthUpTo2048WithRandomCutsAndOffsets) {
  std::mt19937_64 rng(20240611);
  for (std::size_t n = 0; n <= 2048; ++n) {
    std::vector<std::uint8_t> data = RandomBytes(n, n);
    std::size_t src_off = rng() % 64;
    std::size_t dst_off = rng() % 64;
    // One call, then up to 8 random cuts (repeats give empty Appends).
    CheckCopy(GetParam(), data, src_off, dst_off, {});
    std::vector<std::size_t> cuts(rng() % 9);
    for (auto& c : cuts) c = n == 0 ? 0 : rng() % (n + 1);
    CheckCopy(GetParam(), data, src_off, dst_off, cuts);
  }
}

TEST_P(Crc32cCopierTest, AllOffsetPairs) {
  std::mt19937_64 rng(7);
  for (std::size_t n : {std::size_t{63}, std::size_t{300}, std::size_t{1010}}) {
    std::vector<std::uint8_t> data = RandomBytes(n, n * 31);
    for (std::size_t src_off = 0; src_off < 64; ++src_off) {
      for (std::size_t dst_off = 0; dst_off < 64; ++dst_off) {
        CheckCopy(GetParam(), data, src_off, dst_off, {rng() % (n + 1)});
      }
    }
  }
}

// Record-like pieces: a few header bytes, then a long value, over and over.
TEST_P(Crc32cCopierTest, SmallAndLargePiecesAlternating) {
  std::mt19937_64 rng(99);
  std::vector<std::uint8_t> data = RandomBytes(200000, 5);
  std::vector<std::size_t> cuts;
  for (std::size_t at = 0;;) {
    at += 1 + rng() % 12;
    if (at >= data.size()) break;
    cuts.push_back(at);
    at += rng() % 2000;
    if (at >= data.size()) break;
    cuts.push_back(at);
  }
  CheckCopy(GetParam(), data, 3, 21, cuts);
}

TEST_P(Crc32cCopierTest, OneMebibyte) {
  std::vector<std::uint8_t> data = RandomBytes(std::size_t{1} << 20, 1);
  CheckCopy(GetParam(), data, 0, 0, {});
  CheckCopy(GetParam(), data, 17, 45, {});
  std::mt19937_64 rng(3);
  std::vector<std::size_t> cuts(100);
  for (auto& c : cuts) c = rng() % (data.size() + 1);
  CheckCopy(GetParam(), data, 1, 63, cuts);
}

TEST_P(Crc32cCopierTest, ContinuesFromAPreviousCrc) {
  for (std::size_t n :
       {std::size_t{0}, std::size_t{3}, std::size_t{64}, std::size_t{700}, std::size_t{4096}}) {
    std::vector<std::uint8_t> data = RandomBytes(n, n + 1);
    for (std::uint32_t start : {0u, 1u, 0xFFFFFFFFu, 0x12345678u})
      CheckCopy(GetParam(), data, 5, 9, {n / 3}, start);
  }
}

// ns <= 16 bytes of data from `at` as the copier takes them in registers, with random bytes
// beyond ns (which it must ignore).
std::pair<std::uint64_t, std::uint64_t> RegisterBytes(std::mt19937_64& rng,
                                                      const std::vector<std::uint8_t>& data,
                                                      std::size_t at, std::size_t ns) {
  std::uint8_t bytes[16];
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
  if (ns > 0) std::memcpy(bytes, data.data() + at, ns);
  std::uint64_t lo, hi;
  std::memcpy(&lo, bytes, 8);
  std::memcpy(&hi, bytes + 8, 8);
  return {lo, hi};
}

// The copier holds data (from crc `start`), copied to out, with out's guard bytes untouched.
void ExpectCopied(const Crc32cCopier& copier, const std::vector<std::uint8_t>& data,
                  const std::vector<std::uint8_t>& out, std::uint32_t start, int round) {
  ASSERT_EQ(copier.Finish(), Crc32c(data, start)) << round;
  ASSERT_EQ(copier.size(), data.size());
  ASSERT_TRUE(std::equal(data.begin(), data.end(), out.begin())) << round;
  for (std::size_t i = data.size(); i < out.size(); ++i) ASSERT_EQ(out[i], 0xA5) << round;
}

// Register bytes (as the writer passes varints), alone or followed by a pointer piece, at
// every phase of the open block; register bytes beyond ns are ignored.
TEST_P(Crc32cCopierTest, RegisterBytesThenPointerBytes) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::uint8_t> data = RandomBytes(rng() % 3000, rng());
    constexpr std::size_t kGuard = 32;
    std::vector<std::uint8_t> out(data.size() + kGuard, 0xA5);
    Crc32cCopier copier(GetParam());
    for (std::size_t at = 0; at < data.size();) {
      std::size_t ns = std::min<std::size_t>(data.size() - at, rng() % 17);
      std::size_t n = std::min<std::size_t>(data.size() - at - ns, rng() % 2 ? 0 : rng() % 300);
      auto [lo, hi] = RegisterBytes(rng, data, at, ns);
      copier.Append(lo, hi, ns, data.data() + at + ns, n, out.data() + at);
      at += ns + n;
    }
    ASSERT_NO_FATAL_FAILURE(ExpectCopied(copier, data, out, 0, round));
  }
}

// AppendPieces (the writer's batch path) against the same bytes: pieces of every shape, in
// calls of several sizes, mixed with plain Appends, before and after the first full block.
TEST_P(Crc32cCopierTest, PiecesInOneCall) {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 100; ++round) {
    std::vector<std::uint8_t> data = RandomBytes(rng() % 20000, rng());
    constexpr std::size_t kGuard = 32;
    std::vector<std::uint8_t> out(data.size() + kGuard, 0xA5);
    const std::uint32_t start = round % 3 == 0 ? 0x9ABCDEF0u : 0u;
    Crc32cCopier copier(GetParam());
    copier.Reset(start);
    for (std::size_t at = 0; at < data.size();) {
      if (rng() % 8 == 0) {  // an ordinary Append between batches of pieces
        std::size_t n = std::min<std::size_t>(data.size() - at, rng() % 200);
        copier.Append(data.data() + at, n, out.data() + at);
        at += n;
        continue;
      }
      std::vector<Crc32cCopier::Piece> pieces(rng() % 40);
      const std::size_t first = at;
      for (auto& p : pieces) {
        std::size_t ns = std::min<std::size_t>(data.size() - at, rng() % 17);
        std::size_t cap = rng() % 4 == 0 ? 2000 : 70;  // short pieces keep blocks open
        std::size_t n = std::min<std::size_t>(data.size() - at - ns, rng() % cap);
        std::tie(p.lo, p.hi) = RegisterBytes(rng, data, at, ns);
        p.ns = ns;
        p.src = data.data() + at + ns;
        p.n = n;
        at += ns + n;
      }
      copier.AppendPieces(pieces.data(), pieces.size(), out.data() + first);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectCopied(copier, data, out, start, round));
  }
}

TEST_P(Crc32cCopierTest, FinishMidStreamAndReset) {
  std::vector<std::uint8_t> data = RandomBytes(3000, 12);
  std::vector<std::uint8_t> out(data.size());
  Crc32cCopier copier(GetParam());
  for (std::size_t at :
       {std::size_t{0}, std::size_t{10}, std::size_t{64}, std::size_t{1000}, std::size_t{2999}}) {
    copier.Reset();
    copier.Append(data.data(), at, out.data());
    ASSERT_EQ(copier.Finish(), Crc32c({data.data(), at})) << at;
    copier.Append(data.data() + at, data.size() - at, out.data() + at);
    ASSERT_EQ(copier.Finish(), Crc32c(data)) << at;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, Crc32cCopierTest,
                         ::testing::Values(Crc32cKernel::kAuto, Crc32cKernel::kPortable),
                         [](const auto& p) {
                           return p.param == Crc32cKernel::kAuto ? "Auto" : "Portable";
                         });

TEST(Crc32cCopier, ReportsItsKernel) {
  EXPECT_FALSE(Crc32cCopier(Crc32cKernel::kPortable).fused());
  // Whether kAuto fuses depends on the CPU; say which one this run covered.
  std::printf("fused kernel on this CPU: %s\n", Crc32cCopier().fused() ? "yes" : "no");
}

// ---------------------------------------------------------------- Crc32cCombine

TEST(Crc32cCombine, MatchesCrcOfConcatenation) {
  std::mt19937_64 rng(21);
  std::vector<std::uint8_t> data = RandomBytes(70000, 4);
  std::vector<std::size_t> splits = {0, 1, 40, 61, 255, 256, 65536, 69999, 70000};
  for (int i = 0; i < 50; ++i) splits.push_back(rng() % (data.size() + 1));
  for (std::size_t split : splits) {
    ByteView a{data.data(), split};
    ByteView b{data.data() + split, data.size() - split};
    for (Crc32cKernel k : {Crc32cKernel::kAuto, Crc32cKernel::kPortable}) {
      ASSERT_EQ(Crc32cCombine(Crc32c(a), Crc32c(b), b.size(), k), Crc32c(data)) << split;
    }
  }
}

// Lengths beyond 4 GiB exercise the upper tables without hashing gigabytes: combining is
// associative, and both implementations must agree.
TEST(Crc32cCombine, LargeLengthsAreConsistent) {
  std::mt19937_64 rng(22);
  for (int i = 0; i < 200; ++i) {
    auto a = static_cast<std::uint32_t>(rng());
    auto b = static_cast<std::uint32_t>(rng());
    auto c = static_cast<std::uint32_t>(rng());
    std::uint64_t lb = rng() >> (rng() % 64);
    std::uint64_t lc = rng() >> (rng() % 64);
    if (lb + lc < lb) continue;
    std::uint32_t left = Crc32cCombine(Crc32cCombine(a, b, lb), c, lc);
    std::uint32_t right = Crc32cCombine(a, Crc32cCombine(b, c, lc), lb + lc);
    ASSERT_EQ(left, right) << lb << " " << lc;
    ASSERT_EQ(Crc32cCombine(a, b, lb, Crc32cKernel::kPortable), Crc32cCombine(a, b, lb)) << lb;
  }
}

// ---------------------------------------------------------------- the v2 writer

// Batches built through the fused copier are byte-identical to the two-pass path's, and
// their stored CRC is Crc32c over attributes..end.
TEST(Crc32cCopierWriter, FusedAndPortableBuildersWriteTheSameBatches) {
  std::mt19937_64 rng(31);
  std::vector<std::uint8_t> pool = RandomBytes(1 << 16, 6);
  auto view = [&](std::size_t n) {
    std::size_t at = rng() % (pool.size() - n);
    return std::string_view(reinterpret_cast<const char*>(pool.data() + at), n);
  };
  auto size = [&] {
    switch (rng() % 4) {
      case 0:
        return static_cast<std::size_t>(rng() % 8);
      case 1:
        return static_cast<std::size_t>(rng() % 128);
      case 2:
        return static_cast<std::size_t>(1000);
      default:
        return static_cast<std::size_t>(rng() % 5000);
    }
  };
  BatchBuilder fused;
  BatchBuilder portable(Crc32cKernel::kPortable);
  ByteBuffer a, b;
  for (int batch = 0; batch < 100; ++batch) {
    std::size_t n = 1 + rng() % 40;
    std::vector<std::vector<Header>> headers(n);
    std::vector<Record> records(n);
    for (std::size_t i = 0; i < n; ++i) {
      Record& r = records[i];
      // Some batches mix far-apart timestamps: deltas whose varlongs take 9-10 bytes.
      constexpr std::int64_t kFar[] = {-1, 0, std::int64_t{1} << 62, 1700000000000};
      r.timestamp = batch % 4 == 0 ? kFar[rng() % 4]
                                   : 1700000000000 + static_cast<std::int64_t>(rng() % 100000);
      if (rng() % 4) r.key = view(size());
      if (rng() % 8) r.value = view(size());
      for (std::size_t h = rng() % 3; h > 0; --h) {
        Header hd{view(rng() % 20), std::nullopt};
        if (rng() % 4) hd.value = view(size());
        headers[i].push_back(hd);
      }
      r.headers = headers[i];
    }
    BatchOptions o;
    o.magic = 2;
    o.base_offset = static_cast<std::int64_t>(rng() % 1000);
    o.transactional = rng() % 2;
    ASSERT_TRUE(WriteBatch(fused, o, records, a).ok());
    ASSERT_TRUE(WriteBatch(portable, o, records, b).ok());
    ASSERT_EQ(a.size(), b.size()) << batch;
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << batch;
    ASSERT_EQ(wire::Get32(a.data() + kV2Crc),
              Crc32c({a.data() + kV2Attributes, a.size() - kV2Attributes}));
    BatchReader reader;
    ReadResult got;
    ASSERT_TRUE(reader.Read(a.view(), got).ok()) << batch;
    ASSERT_EQ(got.records.size(), n);
  }
}

// Append(span) (fused), Append(record) one by one (fused) and Append(span) (portable) write
// the same batch, which reads back to `records`.
void CheckSpanAppend(const std::vector<Record>& records, const BatchOptions& o, int batch) {
  BatchBuilder fused;
  BatchBuilder portable(Crc32cKernel::kPortable);
  ByteBuffer by_span, by_record, by_span_portable;
  const std::size_t n = records.size();
  ASSERT_TRUE(WriteBatch(fused, o, records, by_span).ok());
  ASSERT_TRUE(WriteBatch(portable, o, records, by_span_portable).ok());
  ASSERT_TRUE(fused.Begin(o, by_record).ok());
  for (const Record& r : records) ASSERT_TRUE(fused.Append(r).ok());
  ASSERT_TRUE(fused.Finish().ok());
  ASSERT_EQ(by_span.size(), by_record.size()) << batch;
  ASSERT_EQ(std::memcmp(by_span.data(), by_record.data(), by_span.size()), 0) << batch;
  ASSERT_EQ(by_span.size(), by_span_portable.size()) << batch;
  ASSERT_EQ(std::memcmp(by_span.data(), by_span_portable.data(), by_span.size()), 0) << batch;
  BatchReader reader;
  ReadResult got;
  ASSERT_TRUE(reader.Read(by_span.view(), got).ok()) << batch;  // checks the CRC
  ASSERT_EQ(got.records.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(got.records[i].offset, o.base_offset + static_cast<std::int64_t>(i));
    ASSERT_EQ(got.records[i].timestamp, records[i].timestamp) << batch << " " << i;
    ASSERT_EQ(got.records[i].key, records[i].key) << batch << " " << i;
    ASSERT_EQ(got.records[i].value, records[i].value) << batch << " " << i;
  }
}

// Append(span), which WriteBatch uses, writes what Append(record) one by one writes, with
// either kernel. The records sit around the limits of its fast path: values, timestamp
// deltas (either sign) and keys that do or do not fit, next to headers and keys that
// always take the general path.
TEST(Crc32cCopierWriter, SpanAppendMatchesRecordByRecord) {
  std::mt19937_64 rng(41);
  std::vector<std::uint8_t> pool = RandomBytes((1 << 20) + 4096, 8);
  auto view = [&](std::size_t n) {
    std::size_t at = rng() % (pool.size() - n);
    return std::string_view(reinterpret_cast<const char*>(pool.data() + at), n);
  };
  constexpr std::size_t kValueLimit = std::size_t{1} << 20;  // fast path: values below
  constexpr std::int64_t kDeltaLimit = std::int64_t{1} << 20;
  const Header header{"h", std::string_view("v")};
  // Varint lengths change at 2^7 and 2^14 (zigzag values: deltas and sizes of 64 and 8192).
  auto near_step = [&] {
    return (std::int64_t{1} << (6 + 7 * (rng() % 2))) - 3 + static_cast<std::int64_t>(rng() % 6);
  };
  for (int batch = 0; batch < 60; ++batch) {
    // Batch 0 has offset deltas past 8192.
    std::size_t n = batch == 0 ? 8300 : 1 + rng() % (batch % 10 == 1 ? 200 : 40);
    std::vector<Record> records(n);
    const std::int64_t base = 1700000000000;
    for (std::size_t i = 0; i < n; ++i) {
      Record& r = records[i];
      switch (rng() % 5) {
        case 0:
          r.timestamp = base + static_cast<std::int64_t>(i);
          break;
        case 1:
          r.timestamp = base + kDeltaLimit - 2 + static_cast<std::int64_t>(rng() % 4);
          break;
        case 2:
          r.timestamp = base - kDeltaLimit - 2 + static_cast<std::int64_t>(rng() % 4);
          break;
        case 3:
          r.timestamp = rng() % 2 ? -1 : base + (rng() % 2 ? 1 : -1) * near_step();
          break;
        default:
          r.timestamp = base + static_cast<std::int64_t>(rng() % 100000);
          break;
      }
      switch (batch == 0 ? 6 : rng() % 6) {  // batch 0: short values only, it is long
        case 0:
          break;  // null value
        case 1:
          r.value = view(0);
          break;
        case 2:
          r.value = view(kValueLimit - 40 + rng() % 80);
          break;  // body crosses 2^20
        case 3:
          r.value = view(static_cast<std::size_t>(near_step()));
          break;
        case 6:
          r.value = view(rng() % 100);
          break;
        default:
          r.value = view(rng() % 3000);
          break;
      }
      switch (rng() % 8) {
        case 0:
          r.key = view(0);
          break;
        case 1:
          r.key = view(1 + rng() % 20);
          break;
        case 2:
          r.headers = {&header, 1};
          break;
        default:
          break;  // null key
      }
    }
    BatchOptions o;
    o.base_offset = static_cast<std::int64_t>(rng() % 1000);
    CheckSpanAppend(records, o, batch);
  }
  Record r;
  ASSERT_FALSE(BatchBuilder().Append(std::span<const Record>(&r, 1)).ok());  // before Begin
}

// Runs of records of one shape (value size, null or empty key), as producers send them,
// take the writer's shortcut (the previous prefix with new deltas); the runs break on a
// changed size, key, header or delta length (offsets and timestamps crossing 64 and 8192).
TEST(Crc32cCopierWriter, RunsOfOneShape) {
  std::mt19937_64 rng(43);
  std::vector<std::uint8_t> pool = RandomBytes(1 << 16, 9);
  auto view = [&](std::size_t n) {
    std::size_t at = rng() % (pool.size() - n);
    return std::string_view(reinterpret_cast<const char*>(pool.data() + at), n);
  };
  const Header header{"h", std::nullopt};
  constexpr std::size_t kSizes[] = {0, 5, 63, 64, 1000, 8185, 8192};
  for (int batch = 0; batch < 80; ++batch) {
    const std::size_t n = 1 + rng() % (batch % 4 == 0 ? 9000 : 300);
    const std::size_t size = kSizes[rng() % std::size(kSizes)];
    const bool null_value = batch % 7 == 3;
    std::vector<Record> records(n);
    const std::int64_t base = 1700000000000;
    for (std::size_t i = 0; i < n; ++i) {
      Record& r = records[i];
      switch (batch % 3) {
        case 0:  // one millisecond apart: deltas cross 64 and 8192 with the offsets
          r.timestamp = base + static_cast<std::int64_t>(i);
          break;
        case 1:  // mostly small deltas either side, now and then past a varint step
          r.timestamp =
              base + static_cast<std::int64_t>(rng() % 40) - 20 + (rng() % 16 == 0 ? 9000 : 0);
          break;
        default:
          r.timestamp = base + static_cast<std::int64_t>(rng() % 20000);
          break;
      }
      if (!null_value) r.value = view(size);
      if (rng() % 50 == 0) r.value = view(size + 1);  // breaks the run
      switch (rng() % 60) {
        case 0:
          r.key = view(0);  // empty key: another shape
          break;
        case 1:
          r.key = view(3);
          break;
        case 2:
          r.headers = {&header, 1};
          break;
        default:
          break;
      }
    }
    BatchOptions o;
    o.base_offset = static_cast<std::int64_t>(rng() % 1000);
    CheckSpanAppend(records, o, batch);
  }
}

}  // namespace
}  // namespace kbench::record
