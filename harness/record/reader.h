#pragma once

// Reads what a consumer (or a broker) receives: any sequence of v0/v1 messages and v2 record
// batches. Every length is checked against what is present and every CRC is verified;
// compressed sections are decompressed (under a size cap) and every record is decoded.
// Bad input yields a Status naming the entry, the field and what is wrong; it never
// crashes, loops or allocates without bound.
//
// A BatchReader reuses its codec contexts and buffers, and ReadResult its vectors, so
// reading allocates nothing in steady state.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "harness/bytes.h"
#include "harness/record/record.h"
#include "harness/record/record_codec.h"
#include "harness/status.h"

namespace kbench::record {

struct DecodedRecord {
  std::int64_t offset = 0;  // absolute
  std::int64_t timestamp = kNoTimestamp;
  std::int64_t stored_offset = 0;  // as on the wire: v2 offsetDelta, v1 inner relative, v0 absolute
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  std::uint32_t header_begin = 0;  // index into ReadResult::headers
  std::uint32_t header_count = 0;
};

// One top-level entry: a v2 batch, a v0/v1 compressed wrapper, or a single uncompressed
// v0/v1 message.
struct BatchInfo {
  std::size_t wire_offset = 0;  // where the entry starts in the input
  std::size_t wire_bytes = 0;
  std::int8_t magic = 0;
  CodecSpec codec;  // the row Kafka's compression code reads with (codec:none, snappy, ...)
  TimestampType timestamp_type = TimestampType::kCreateTime;
  std::uint16_t attributes = 0;
  std::uint32_t crc = 0;
  std::int64_t base_offset = 0;  // v0/v1: the (wrapper) message's offset field
  std::int64_t last_offset = 0;
  std::int32_t partition_leader_epoch = -1;  // v2 fields from here on
  std::int32_t last_offset_delta = 0;
  std::int64_t base_timestamp = kNoTimestamp;
  std::int64_t max_timestamp = kNoTimestamp;  // v1: the wrapper's/message's timestamp
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::int32_t base_sequence = -1;
  bool transactional = false;
  bool control = false;
  std::size_t first_record = 0;  // index into ReadResult::records
  std::size_t record_count = 0;
  std::size_t uncompressed_bytes = 0;  // size of the records section once decompressed
};

struct ReadResult {
  std::vector<BatchInfo> batches;
  std::vector<DecodedRecord> records;
  std::vector<Header> headers;

  std::span<const Header> headers_of(const DecodedRecord& r) const {
    return {headers.data() + r.header_begin, r.header_count};
  }
  void clear() {
    batches.clear();
    records.clear();
    headers.clear();
  }
};

struct ReaderOptions {
  // Cap on each decompressed section: a hostile size field cannot make the reader allocate
  // more than this.
  std::size_t max_decompressed_bytes = kMaxDecompressedBytes;
};

class BatchReader {
 public:
  explicit BatchReader(ReaderOptions options = {}) : options_(options) {}

  // Decodes every entry of `data` into `result` (cleared first). Views in `result` point
  // into `data` or into this reader's buffers: valid until the next Read.
  Status Read(ByteView data, ReadResult& result);

 private:
  Status ReadV2(ByteView entry, std::size_t at, ReadResult& result);
  Status ReadLegacy(ByteView entry, std::size_t at, ReadResult& result);
  ByteBuffer& NextSectionBuffer();

  ReaderOptions options_;
  RecordCodecs codecs_;
  std::vector<ByteBuffer> sections_;  // one decompressed section per compressed entry
  std::size_t sections_used_ = 0;
};

// Parses one record of a v2 records section starting at *p; advances *p. Appends headers
// to `headers`. Exposed for the validator and tests.
Status ParseV2Record(const std::uint8_t** p, const std::uint8_t* end, DecodedRecord* record,
                     std::int64_t* timestamp_delta, std::vector<Header>& headers);

}  // namespace kbench::record
