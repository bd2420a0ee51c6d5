#include "harness/latency_consumer.h"

#include <cstring>
#include <utility>

#include "harness/consumer.h"
#include "harness/producer.h"

namespace kbench {
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t Ns(Clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

constexpr std::size_t kMaxIntervals = 100000;  // bounds memory on runaway windows

}  // namespace

StatusOr<std::unique_ptr<LatencyConsumer>> LatencyConsumer::Create(const ClientSettings& settings,
                                                                   const std::string& topic,
                                                                   int partitions) {
  // fetch.wait.max.ms only bounds an idle partition's long poll (the broker answers a fetch
  // as soon as fetch.min.bytes = 1 byte is there), so it does not add to the latency.
  ClientSettings all = {{"group.id", "kbench-end-to-end"},
                        {"enable.auto.commit", "false"},
                        {"enable.partition.eof", "false"},
                        {"fetch.min.bytes", "1"},
                        {"auto.offset.reset", "error"}};
  StatusOr<rd_kafka_t*> made = NewConsumerHandle(std::move(all), settings);
  if (!made) return made.status();
  rd_kafka_t* rk = *made;
  std::unique_ptr<LatencyConsumer> c(new LatencyConsumer());
  c->rk_.reset(rk);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p)
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = 0;
  const rd_kafka_resp_err_t assigned = rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  if (assigned) return Status::Error(std::string("assign failed: ") + rd_kafka_err2str(assigned));
  c->next_.assign(static_cast<std::size_t>(partitions), 0);
  c->thread_ = std::thread([raw = c.get()] { raw->Loop(); });
  return c;
}

LatencyConsumer::~LatencyConsumer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (rk_) rd_kafka_consumer_close(rk_.get());
}

void LatencyConsumer::Fail(std::string message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.empty()) error_ = std::move(message);
}

void LatencyConsumer::Loop() {
  while (!stop_.load(std::memory_order_relaxed)) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_.get(), 100);
    if (!m) continue;
    const std::uint64_t now = Ns(Clock::now());  // when the application has the record
    if (m->err) {
      Fail(std::string("consume error: ") + rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      continue;
    }
    std::uint64_t intended = 0;
    rd_kafka_headers_t* headers = nullptr;
    const void* value = nullptr;
    std::size_t size = 0;
    const bool stamped = rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR &&
                         rd_kafka_header_get_last(headers, kSendTimeHeader, &value, &size) ==
                             RD_KAFKA_RESP_ERR_NO_ERROR &&
                         size == sizeof intended;
    if (stamped) std::memcpy(&intended, value, sizeof intended);
    const auto p = static_cast<std::size_t>(m->partition);
    const std::int64_t offset = m->offset;
    rd_kafka_message_destroy(m);
    std::lock_guard<std::mutex> lock(mu_);
    if (p >= next_.size() || offset != next_[p]) {
      if (error_.empty()) {
        error_ = p >= next_.size()
                     ? "a record from partition " + std::to_string(p) + " beyond the " +
                           std::to_string(next_.size()) + " read"
                     : "partition " + std::to_string(p) + ": offset " + std::to_string(offset) +
                           " arrived where " + std::to_string(next_[p]) + " was due";
      }
      continue;
    }
    ++next_[p];
    if (!stamped) {
      if (error_.empty())
        error_ = "partition " + std::to_string(p) + ": offset " + std::to_string(offset) +
                 " has no " + kSendTimeHeader + " header";
      continue;
    }
    if (origin_ns_ != 0 && intended >= origin_ns_) {
      const std::uint64_t i = (intended - origin_ns_) / interval_ns_;
      if (i < kMaxIntervals) {
        if (i >= intervals_.size()) intervals_.resize(i + 1);
        intervals_[i].Record(now > intended ? (now - intended) / 1000 : 0);
      }
    }
  }
}

void LatencyConsumer::OpenWindow(Clock::time_point origin, std::chrono::nanoseconds interval) {
  std::lock_guard<std::mutex> lock(mu_);
  intervals_.clear();
  origin_ns_ = Ns(origin);
  interval_ns_ = static_cast<std::uint64_t>(std::max<std::int64_t>(1, interval.count()));
}

Status LatencyConsumer::WaitFor(const PartitionCounts& want, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_.empty()) return Status::Error("end-to-end consumer: " + error_);
      PartitionComparison c = ComparePartitionCounts(want, next_, "delivered", "received");
      if (c.duplicated > 0)
        return Status::Error("end-to-end consumer received extra records: " + c.detail);
      if (c.equal()) return Status::Ok();
      if (Clock::now() >= deadline) {
        return Status::Error("end-to-end consumer: not every delivered record arrived within " +
                             std::to_string(timeout.count()) + " ms: " + c.detail);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<LatencyHistogram> LatencyConsumer::IntervalLatency(Clock::time_point end) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LatencyHistogram> out;
  if (origin_ns_ == 0) return out;
  const std::uint64_t end_ns = Ns(end);
  const std::uint64_t n = end_ns > origin_ns_ ? (end_ns - origin_ns_) / interval_ns_ : 0;
  for (std::uint64_t i = 0; i < n && i < intervals_.size(); ++i) out.push_back(intervals_[i]);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

LatencyHistogram LatencyConsumer::WindowLatency(Clock::time_point end) const {
  LatencyHistogram all;
  for (const auto& h : IntervalLatency(end)) all.Merge(h);
  return all;
}

std::int64_t LatencyConsumer::received() const {
  std::lock_guard<std::mutex> lock(mu_);
  return TotalCount(next_);
}

}  // namespace kbench
