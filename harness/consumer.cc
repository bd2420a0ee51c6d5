#include "harness/consumer.h"

#include <algorithm>
#include <utility>

#include "harness/librdkafka_api.h"

namespace kbench {

namespace {

int OnConsumerStats(rd_kafka_t*, char* json, std::size_t len, void* opaque) {
  static_cast<StatsAccumulator*>(opaque)->AddEmit(std::string_view(json, len));
  return 0;  // librdkafka frees the JSON
}

}  // namespace

StatusOr<rd_kafka_t*> NewConsumerHandle(ClientSettings all, const ClientSettings& settings,
                                        StatsAccumulator* stats) {
  if (stats) all.emplace_back("statistics.interval.ms", "100");
  all.insert(all.end(), settings.begin(), settings.end());
  StatusOr<rd_kafka_conf_t*> conf = BuildConf(all);
  if (!conf) return conf.status();
  if (stats) {
    rd_kafka_conf_set_opaque(*conf, stats);
    rd_kafka_conf_set_stats_cb(*conf, &OnConsumerStats);
  }
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, *conf, err, sizeof err);
  if (!rk) {
    rd_kafka_conf_destroy(*conf);
    return Status::Error(std::string("cannot create consumer: ") + err);
  }
  rd_kafka_poll_set_consumer(rk);
  return rk;
}

StatusOr<std::unique_ptr<ConsumerDriver>> ConsumerDriver::Create(const ClientSettings& settings,
                                                                 const std::string& topic,
                                                                 int partitions) {
  // fetch.wait.max.ms: a caught-up partition's long poll (500 ms by default) would delay
  // the next read's first fetch on that broker; reads of a full topic never need it.
  ClientSettings all = {{"group.id", "kbench-consume"},
                        {"enable.auto.commit", "false"},
                        {"enable.partition.eof", "false"},
                        {"fetch.wait.max.ms", "10"},
                        // A truncated log must fail the read, not silently skip to the end.
                        {"auto.offset.reset", "error"}};
  std::unique_ptr<ConsumerDriver> d(new ConsumerDriver());
  StatusOr<rd_kafka_t*> rk = NewConsumerHandle(std::move(all), settings, &d->stats_);
  if (!rk) return rk.status();
  d->rk_.reset(*rk);
  d->topic_ = topic;
  d->partitions_ = partitions;
  return d;
}

Status ConsumerDriver::StartPass() {
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions_);
  for (int p = 0; p < partitions_; ++p) {
    rd_kafka_topic_partition_list_add(parts, topic_.c_str(), p)->offset = 0;  // fresh topic
  }
  // The first read assigns every partition; later reads keep the assignment and seek back
  // to offset 0 (re-assigning raced with in-flight fetches of the old assignment and
  // could stall on the mock cluster). The seek is asynchronous (timeout 0): a synchronous
  // seek waits for every partition's fetcher to acknowledge it and timed out on a loaded
  // machine; librdkafka's op versions discard anything fetched before the seek, and the
  // read below counts every record, so the result is the same.
  std::string failure;
  if (!assigned_) {
    if (rd_kafka_resp_err_t err = rd_kafka_assign(rk_.get(), parts)) {
      failure = std::string("assign failed: ") + rd_kafka_err2str(err);
    }
    assigned_ = true;
  } else if (!HasFeature(Feature::kSeekPartitions)) {
    // Before 1.6.0: one asynchronous rd_kafka_seek per partition, the same request.
    for (int i = 0; i < parts->cnt && failure.empty(); ++i) {
      rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_.get(), topic_.c_str(), nullptr);
      rd_kafka_resp_err_t err = rd_kafka_seek(rkt, parts->elems[i].partition, 0, 0);
      rd_kafka_topic_destroy(rkt);
      if (err && err != RD_KAFKA_RESP_ERR__IN_PROGRESS) {
        failure = "seek of partition " + std::to_string(parts->elems[i].partition) +
                  " failed: " + rd_kafka_err2str(err);
      }
    }
  } else if (rd_kafka_error_t* error = Optional().seek_partitions(rk_.get(), parts, 0)) {
    failure = std::string("seek to offset 0 failed: ") + Optional().error_string(error);
    Optional().error_destroy(error);
  } else {
    for (int i = 0; i < parts->cnt; ++i) {
      rd_kafka_resp_err_t err = parts->elems[i].err;
      if (err && err != RD_KAFKA_RESP_ERR__IN_PROGRESS && failure.empty()) {
        failure = "seek of partition " + std::to_string(parts->elems[i].partition) +
                  " failed: " + rd_kafka_err2str(err);
      }
    }
  }
  rd_kafka_topic_partition_list_destroy(parts);
  return failure.empty() ? Status() : Status::Error(failure);
}

Status ConsumerDriver::ReadUntil(const PartitionCounts& want,
                                 std::chrono::steady_clock::time_point deadline,
                                 std::chrono::milliseconds idle_timeout, Cursor* cursor,
                                 Window* window) {
  using Clock = std::chrono::steady_clock;
  if (want.size() > static_cast<std::size_t>(partitions_) || TotalCount(want) <= 0) {
    return Status::Error("nothing to read: expected records in " + std::to_string(want.size()) +
                         " partitions of a topic with " + std::to_string(partitions_));
  }
  auto now = Clock::now();
  auto last_record = now;
  std::int64_t since_clock = 0;
  while (now < deadline) {
    if (!cursor->started || cursor->remaining == 0) {
      if (cursor->started) ++cursor->passes;
      if (Status s = StartPass(); !s) return s;
      cursor->started = true;
      cursor->next.assign(want.size(), 0);
      cursor->remaining = TotalCount(want);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    rd_kafka_message_t* m = rd_kafka_consumer_poll(
        rk_.get(), static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 100)));
    if (!m) {
      now = Clock::now();
      since_clock = 0;
      if (now - last_record > idle_timeout) {
        return Status::Error(
            "a pass read " + std::to_string(TotalCount(want) - cursor->remaining) + " of " +
            std::to_string(TotalCount(want)) + " records; nothing more for " +
            std::to_string(idle_timeout.count()) +
            " ms: " + ComparePartitionCounts(want, cursor->next, "written", "read").detail);
      }
      continue;
    }
    if (m->err) {
      std::string what = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      return Status::Error("consume error in a pass: " + what);
    }
    // The same per-record check as ReadAll: one compare tells a record read twice, skipped
    // or extra.
    const auto p = static_cast<std::size_t>(m->partition);
    const std::int64_t offset = m->offset;
    if (p >= want.size() || offset != cursor->next[p] || offset >= want[p]) {
      std::string wrong =
          p >= want.size() ? "a record from partition " + std::to_string(m->partition) +
                                 " beyond the " + std::to_string(want.size()) + " written to"
          : offset != cursor->next[p]
              ? "partition " + std::to_string(p) + ": offset " + std::to_string(offset) +
                    " arrived where " + std::to_string(cursor->next[p]) + " was due"
              : "partition " + std::to_string(p) + ": a record at offset " +
                    std::to_string(offset) + " beyond the " + std::to_string(want[p]) +
                    " written (extra records)";
      rd_kafka_message_destroy(m);
      return Status::Error("in pass " + std::to_string(cursor->passes + 1) + ": " + wrong);
    }
    ++cursor->next[p];
    --cursor->remaining;
    if (window && now >= window->origin) {
      const auto i = static_cast<std::size_t>((now - window->origin) / window->interval);
      if (i < 100000) {  // bounds memory on runaway windows
        if (i >= window->records.size()) {
          window->records.resize(i + 1, 0);
          window->value_bytes.resize(i + 1, 0);
        }
        ++window->records[i];
        window->value_bytes[i] += static_cast<std::int64_t>(m->len);
      }
    }
    rd_kafka_message_destroy(m);
    if (++since_clock == 64) {  // a clock read per record would cost a few % of the rate
      since_clock = 0;
      now = Clock::now();
      last_record = now;
    }
  }
  return Status();
}

Status ConsumerDriver::ReadAll(const ExpectedRecords& expected,
                               std::chrono::milliseconds idle_timeout, ConsumeResult* out) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  if (Status s = StartPass(); !s) return s;

  ConsumeResult r;
  r.records_per_partition.assign(static_cast<std::size_t>(partitions_), 0);
  const bool digest = !expected.digests.empty();
  std::vector<std::uint64_t> digests(digest ? r.records_per_partition.size() : 0, 0);
  if (expected.counts.size() > r.records_per_partition.size()) {
    return Status::Error("expected records in " + std::to_string(expected.counts.size()) +
                         " partitions; the topic has " + std::to_string(partitions_));
  }
  // The expected offsets of partition p are 0..want[p]-1, and the next one due is
  // r.records_per_partition[p]: one compare per record tells a record read twice, skipped
  // or extra.
  PartitionCounts want = expected.counts;
  want.resize(r.records_per_partition.size(), 0);
  std::int64_t remaining = TotalCount(want);
  Status status;
  auto last_progress = Clock::now();
  while (remaining > 0) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_.get(), 100);
    if (!m) {
      if (Clock::now() - last_progress > idle_timeout) {
        status = Status::Error(
            "read " + std::to_string(r.records) + " of " + std::to_string(TotalCount(want)) +
            " records; nothing more for " + std::to_string(idle_timeout.count()) + " ms: " +
            ComparePartitionCounts(want, r.records_per_partition, "written", "read").detail);
        break;
      }
      continue;
    }
    if (m->err) {
      std::string what = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      status =
          Status::Error("consume error after " + std::to_string(r.records) + " records: " + what);
      break;
    }
    const auto p = static_cast<std::size_t>(m->partition);
    const std::int64_t offset = m->offset;
    std::string wrong;
    if (p >= want.size()) {
      wrong = "a record from partition " + std::to_string(m->partition) + " of a topic with " +
              std::to_string(partitions_);
    } else if (offset != r.records_per_partition[p]) {
      const std::int64_t next = r.records_per_partition[p];
      wrong = "partition " + std::to_string(p) + ": offset " + std::to_string(offset) +
              " arrived where " + std::to_string(next) + " was due (" +
              (offset < next ? "a record read twice)"
                             : std::to_string(offset - next) + " records skipped)");
    } else if (offset >= want[p]) {
      wrong = "partition " + std::to_string(p) + ": a record at offset " + std::to_string(offset) +
              " beyond the " + std::to_string(want[p]) + " written (extra records)";
    }
    if (!wrong.empty()) {
      rd_kafka_message_destroy(m);
      status = Status::Error("after " + std::to_string(r.records) + " records: " + wrong);
      break;
    }
    ++r.records_per_partition[p];
    --remaining;
    ++r.records;
    r.value_bytes += static_cast<std::int64_t>(m->len);
    if (digest) {
      digests[p] +=
          RecordDigest(offset, std::string_view(static_cast<const char*>(m->key), m->key_len),
                       std::string_view(static_cast<const char*>(m->payload), m->len));
    }
    rd_kafka_message_destroy(m);
    last_progress = Clock::now();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (status.ok() && digest) {
    std::string differ;
    for (std::size_t p = 0; p < digests.size(); ++p) {
      const std::uint64_t want_digest = p < expected.digests.size() ? expected.digests[p] : 0;
      if (digests[p] == want_digest) continue;
      differ += std::string(differ.empty() ? "" : ", ") + std::to_string(p);
    }
    if (!differ.empty()) {
      status = Status::Error(
          "read the expected number of records per partition, but not the "
          "records written (key/value digest differs) in partition " +
          differ);
    }
  }
  *out = r;
  return status;
}

}  // namespace kbench
