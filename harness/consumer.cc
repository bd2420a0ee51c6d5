#include "harness/consumer.h"

namespace kbench {

std::unique_ptr<ConsumerDriver> ConsumerDriver::Create(const ClientSettings& settings,
                                                       const std::string& topic, int partitions,
                                                       std::string* error) {
  // fetch.wait.max.ms: a caught-up partition's long poll (500 ms by default) would delay
  // the next read's first fetch on that broker; reads of a full topic never need it.
  ClientSettings all = {{"group.id", "kbench-consume"},
                        {"enable.auto.commit", "false"},
                        {"enable.partition.eof", "false"},
                        {"fetch.wait.max.ms", "10"},
                        // A truncated log must fail the read, not silently skip to the end.
                        {"auto.offset.reset", "error"}};
  all.insert(all.end(), settings.begin(), settings.end());
  rd_kafka_conf_t* conf = BuildConf(all, error);
  if (!conf) return nullptr;
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    *error = std::string("cannot create consumer: ") + err;
    return nullptr;
  }
  std::unique_ptr<ConsumerDriver> d(new ConsumerDriver());
  d->rk_.reset(rk);
  rd_kafka_poll_set_consumer(rk);
  d->topic_ = topic;
  d->partitions_ = partitions;
  return d;
}

Status ConsumerDriver::ReadAll(std::int64_t expected, std::chrono::milliseconds idle_timeout,
                               ConsumeResult* out) {
  using Clock = std::chrono::steady_clock;
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions_);
  for (int p = 0; p < partitions_; ++p) {
    rd_kafka_topic_partition_list_add(parts, topic_.c_str(), p)->offset = 0;  // fresh topic
  }
  auto start = Clock::now();
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
  } else if (rd_kafka_error_t* error = rd_kafka_seek_partitions(rk_.get(), parts, 0)) {
    failure = std::string("seek to offset 0 failed: ") + rd_kafka_error_string(error);
    rd_kafka_error_destroy(error);
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
  if (!failure.empty()) return Status::Error(failure);

  ConsumeResult r;
  Status status;
  auto last_progress = Clock::now();
  while (r.records < expected) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_.get(), 100);
    if (!m) {
      if (Clock::now() - last_progress > idle_timeout) {
        status = Status::Error("read " + std::to_string(r.records) + " of " +
                               std::to_string(expected) + " records; nothing more for " +
                               std::to_string(idle_timeout.count()) + " ms");
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
    ++r.records;
    r.value_bytes += static_cast<std::int64_t>(m->len);
    rd_kafka_message_destroy(m);
    last_progress = Clock::now();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (status.ok() && r.records != expected) {
    status = Status::Error("read " + std::to_string(r.records) + " records, expected " +
                           std::to_string(expected));
  }
  *out = r;
  return status;
}

}  // namespace kbench
