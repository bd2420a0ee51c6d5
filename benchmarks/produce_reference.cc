// Produce's reference loop (produce_reference.h says what is timed and verified).

#include "benchmarks/produce_reference.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <string_view>

#include "fixtures/counters.h"

namespace kbench::bench::produce {

StatusOr<std::unique_ptr<BareProducevWork>> BareProducevWork::Create(const ProduceParams& p) {
  StatusOr<std::unique_ptr<BenchCluster>> cluster = ProduceSetup::CreateCluster(p);
  if (!cluster) return cluster.status();
  std::unique_ptr<BareProducevWork> work(new BareProducevWork(p, std::move(*cluster)));
  if (Status s = work->CreateProducer(); !s) return s;
  return work;
}

BareProducevWork::~BareProducevWork() {
  if (!rk_) return;  // its factory failed
  if (rd_kafka_outq_len(rk_.get()) > 0) {
    rd_kafka_purge(rk_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_flush(rk_.get(), 2000);
  }
  rd_kafka_topic_destroy(rkt_);
}

BareProducevWork::BareProducevWork(const ProduceParams& p, std::unique_ptr<BenchCluster> cluster)
    : setup_(p, std::move(cluster)), window_(p.run.window_seconds) {}

Status BareProducevWork::Verify() {
  Loop(std::max<std::int64_t>(setup_.warmup(), 1), {});
  Flush();
  if (Status e = TakeError(); !e) return Status::Error("warm-up: " + e.message());
  if (Status e = setup_.CheckEndOffsets(delivered_per_partition_); !e)
    return Status::Error("warm-up: " + e.message());
  return Status::Ok();
}

Status BareProducevWork::BeginRun() {
  if (!setup_.windowed()) return Status::Ok();
  Loop(std::numeric_limits<std::int64_t>::max(),
       Clock::now() + std::chrono::duration_cast<Clock::duration>(setup_.warmup_seconds()));
  window_.Reset();
  boundaries_.clear();
  return Status::Ok();
}

void BareProducevWork::Iterate() {
  if (!setup_.windowed()) {
    Loop(setup_.records_per_iteration(), {});
    Flush();
    return;
  }
  if (window_.Open()) {
    boundaries_.push_back({delivered_, delivered_bytes_});
    next_boundary_ = window_.origin() + window_.interval();
  }
  Loop(std::numeric_limits<std::int64_t>::max(), window_.Next());
}

void BareProducevWork::Report(benchmark::State& state) {
  // The same settings as the row it judges, changed alike by the lens or the release.
  if (std::string note = SettingsNote(setup_.params()); !note.empty()) state.SetLabel(note);
  if (setup_.windowed()) {
    // Counts as of the window's last poll; the flush (the drain) comes after, untimed.
    const Count begin = boundaries_.empty() ? Count{} : boundaries_.front();
    const Count end = {delivered_, delivered_bytes_};
    Flush();
    state.SetItemsProcessed(end.records - begin.records);
    state.SetBytesProcessed(end.bytes - begin.bytes);
    intervals_ = IntervalSeries{};
    const double width = std::chrono::duration<double>(window_.interval()).count();
    for (std::size_t i = 1; i < boundaries_.size(); ++i) {
      intervals_.seconds.push_back(width);
      intervals_.records_per_second.push_back(
          static_cast<double>(boundaries_[i].records - boundaries_[i - 1].records) / width);
      intervals_.mb_per_second.push_back(
          static_cast<double>(boundaries_[i].bytes - boundaries_[i - 1].bytes) / width /
          (1024.0 * 1024.0));
    }
    state.counters[counters::kIntervalCv] = counters::Value(intervals_.RecordsPerSecondCv());
    state.counters[counters::kWindowSeconds] = counters::Value(window_.seconds());
  }
  Status error = TakeError();
  if (error.ok()) error = setup_.CheckEndOffsets(delivered_per_partition_);
  if (!error.ok()) state.SkipWithError(error.message().c_str());
}

Status BareProducevWork::CreateProducer() {
  StatusOr<rd_kafka_conf_t*> built = BuildConf(setup_.settings());
  if (!built) return built.status();
  rd_kafka_conf_t* conf = *built;
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<BareProducevWork*>(opaque);
    if (m->err) {
      ++self->failed_;
    } else {
      ++self->delivered_;
      // Counted per partition for the end-offset check, as a careful user would count.
      auto part = static_cast<std::size_t>(m->partition);
      if (part >= self->delivered_per_partition_.size())
        self->delivered_per_partition_.resize(part + 1, 0);
      ++self->delivered_per_partition_[part];
      self->delivered_bytes_ += static_cast<std::int64_t>(m->len);
    }
  });
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    return Status::Error(std::string("cannot create producer: ") + err);
  }
  rk_.reset(rk);
  rkt_ = rd_kafka_topic_new(rk, setup_.cluster().topic().c_str(), nullptr);
  return Status::Ok();
}

void BareProducevWork::Loop(std::int64_t count, Clock::time_point deadline) {
  rd_kafka_t* rk = rk_.get();
  const RecordSet& records = setup_.records();
  const bool timed = deadline != Clock::time_point{};
  for (std::int64_t i = 0; i < count; ++i) {
    const auto n = static_cast<std::uint64_t>(next_++);
    std::string_view value = records.value(static_cast<std::size_t>(n % records.size()));
    std::string_view key = records.key_at(n);
    for (;;) {
      rd_kafka_resp_err_t err = rd_kafka_producev(
          rk, RD_KAFKA_V_RKT(rkt_), RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
          RD_KAFKA_V_KEY(key.empty() ? nullptr : key.data(), key.size()),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++produced_;
        break;
      }
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        ++rejected_;
        break;
      }
      rd_kafka_poll(rk, 1);
    }
    if ((i & 63) == 63) {
      rd_kafka_poll(rk, 0);
      if (timed) {
        const auto now = Clock::now();
        if (window_.open() && now >= next_boundary_ && now < deadline + window_.interval()) {
          boundaries_.push_back({delivered_, delivered_bytes_});
          next_boundary_ += window_.interval();
        }
        if (now >= deadline) break;
      }
    }
  }
}

void BareProducevWork::Flush() {
  if (rd_kafka_flush(rk_.get(), 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) flush_timed_out_ = true;
}

Status BareProducevWork::TakeError() {
  Status e;
  if (flush_timed_out_ || delivered_ + failed_ != produced_ || failed_ || rejected_) {
    e = Status::Error(std::to_string(produced_ - delivered_) + " of " + std::to_string(produced_) +
                      " records undelivered (" + std::to_string(failed_) + " failed, " +
                      std::to_string(rejected_) + " rejected)");
  }
  produced_ = delivered_ = failed_ = rejected_ = delivered_bytes_ = 0;
  return e;
}

}  // namespace kbench::bench::produce
