// libFuzzer target over kbench's record readers and the broker validation model. The input
// is a log as a broker or consumer receives it: any sequence of v0/v1 messages and v2
// batches (the magic byte at offset 16 picks the parser), any codec. Seeded with the golden
// batches Kafka's Java client wrote (tests/golden/data), which cover every magic and codec.
//
// Properties checked: no crash, hang or unbounded allocation (the sanitizers and libFuzzer's
// limits catch those); whatever the reader accepts, the validator must either reject with a
// message or produce a batch the reader accepts again.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "harness/bytes.h"
#include "harness/record/reader.h"
#include "harness/record/validator.h"

namespace {

// Small enough that a decompression bomb stays well under libFuzzer's RSS limit.
constexpr std::size_t kFuzzDecompressCap = 8u << 20;

kbench::record::ReaderOptions Options() {
  kbench::record::ReaderOptions o;
  o.max_decompressed_bytes = kFuzzDecompressCap;
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kbench;
  using namespace kbench::record;
  static BatchReader reader(Options());
  static LogValidator validator(Options());
  static ReadResult result;

  Status s = reader.Read(ByteView(data, size), result);
  if (!s) {
    if (s.message().empty()) std::abort();  // every rejection must say why
    return 0;
  }
  // Touch every decoded view so the sanitizers see any that point outside live memory.
  std::size_t sum = 0;
  for (const DecodedRecord& r : result.records) {
    if (r.key)
      for (char c : *r.key) sum += static_cast<unsigned char>(c);
    if (r.value)
      for (char c : *r.value) sum += static_cast<unsigned char>(c);
    for (const Header& h : result.headers_of(r))
      sum += h.key.size() + (h.value ? h.value->size() : 0);
  }
  static volatile std::size_t sink;
  sink = sum;

  ByteBuffer batch;
  batch.Assign(ByteView(data, size));
  ValidationOptions vo;
  vo.base_offset = 1000;
  vo.partition_leader_epoch = 3;
  // The topic's settings come from the input's last byte, so every check and the wrapping
  // timestamp arithmetic (extreme "now" and limits) see fuzzed records.
  const std::uint8_t topic = size > 0 ? data[size - 1] : 0;
  vo.compacted_topic = (topic & 1) != 0;
  vo.log_append_time = (topic & 2) != 0 ? std::numeric_limits<std::int64_t>::min() : 1700000000000;
  vo.timestamp_before_max_ms = (topic & 4) != 0 ? 0 : kNoTimestampLimit;
  vo.timestamp_after_max_ms = (topic & 8) != 0 ? kKafka4TimestampAfterMaxMs : kNoTimestampLimit;
  if ((topic & 16) != 0) vo.timestamp_type = TimestampType::kLogAppendTime;
  ValidationResult vr;
  Status v = validator.Validate(batch, vo, &vr);
  if (!v) {
    if (v.message().empty()) std::abort();
    return 0;
  }
  Status again = reader.Read(batch.view(), result);
  if (!again) {
    std::fprintf(stderr, "validated batch no longer reads: %s\n", again.message().c_str());
    std::abort();
  }
  return 0;
}
