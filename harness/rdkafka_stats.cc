#include "harness/rdkafka_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace kbench {
namespace {

using nlohmann::json;

std::int64_t IntField(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return 0;
  if (!it->is_number())
    throw std::runtime_error(std::string("field '") + key + "' is not a number");
  return it->get<std::int64_t>();
}

WindowTotals Window(const json& obj, const char* key) {
  WindowTotals w;
  auto it = obj.find(key);
  if (it == obj.end()) return w;
  if (!it->is_object())
    throw std::runtime_error(std::string("window '") + key + "' is not an object");
  w.sum = static_cast<double>(IntField(*it, "sum"));
  w.cnt = IntField(*it, "cnt");
  return w;
}

double NumberField(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return 0;
  if (!it->is_number())
    throw std::runtime_error(std::string("field '") + key + "' is not a number");
  return it->get<double>();
}

// One broker window as quantile points; windows without records are left out.
void AddStage(const json& broker, const char* key, Stage stage, std::vector<StageWindow>* out) {
  auto it = broker.find(key);
  if (it == broker.end()) return;
  if (!it->is_object())
    throw std::runtime_error(std::string("window '") + key + "' is not an object");
  StageWindow w;
  w.stage = stage;
  w.cnt = IntField(*it, "cnt");
  if (w.cnt <= 0) return;
  static constexpr const char* kPoints[] = {"min", "p50", "p75",    "p90",
                                            "p95", "p99", "p99_99", "max"};
  for (std::size_t i = 0; i < w.x.size(); ++i) w.x[i] = NumberField(*it, kPoints[i]);
  // Percentiles are bucket-rounded (HdrHistogram) and may pass the exact max: keep the
  // points in order, so each window's quantile function is monotone.
  for (std::size_t i = 1; i < w.x.size(); ++i) w.x[i] = std::max(w.x[i], w.x[i - 1]);
  out->push_back(w);
}

constexpr std::array<double, 8> kQuantiles = {0, 0.5, 0.75, 0.9, 0.95, 0.99, 0.9999, 1};

// The window's CDF at v, linear between its quantile points.
double WindowCdf(const StageWindow& w, double v) {
  if (v < w.x.front()) return 0;
  if (v >= w.x.back()) return 1;
  for (std::size_t i = 1; i < w.x.size(); ++i) {
    if (v < w.x[i]) {
      const double span = w.x[i] - w.x[i - 1];
      const double f = span > 0 ? (v - w.x[i - 1]) / span : 1;
      return kQuantiles[i - 1] + f * (kQuantiles[i] - kQuantiles[i - 1]);
    }
  }
  return 1;
}

}  // namespace

double StagePercentile(const std::vector<StageWindow>& windows, Stage stage, double q) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, total = 0;
  for (const auto& w : windows) {
    if (w.stage != stage) continue;
    lo = std::min(lo, w.x.front());
    hi = std::max(hi, w.x.back());
    total += static_cast<double>(w.cnt);
  }
  if (total <= 0) return std::numeric_limits<double>::quiet_NaN();
  auto cdf = [&](double v) {
    double mass = 0;
    for (const auto& w : windows)
      if (w.stage == stage) mass += static_cast<double>(w.cnt) * WindowCdf(w, v);
    return mass / total;
  };
  // The smallest v with cdf(v) >= q, by bisection (the mixture's CDF is monotone).
  for (int i = 0; i < 100 && hi - lo > 1e-6 * std::max(1.0, hi); ++i) {
    const double mid = lo + (hi - lo) / 2;
    (cdf(mid) >= q ? hi : lo) = mid;
  }
  return hi;
}

Status ParseRdkafkaStats(std::string_view text, RdkafkaStats* out) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Status::Error("statistics: not a JSON object");
  RdkafkaStats s;
  try {
    s.txmsgs = IntField(doc, "txmsgs");
    s.txmsg_bytes = IntField(doc, "txmsg_bytes");
    s.rxmsgs = IntField(doc, "rxmsgs");
    s.rxmsg_bytes = IntField(doc, "rxmsg_bytes");
    if (auto brokers = doc.find("brokers"); brokers != doc.end() && brokers->is_object()) {
      for (const auto& [name, b] : brokers->items()) {
        if (!b.is_object()) throw std::runtime_error("broker '" + name + "' is not an object");
        s.tx_wire_bytes += IntField(b, "txbytes");
        s.txretries += IntField(b, "txretries");
        s.txerrs += IntField(b, "txerrs");
        if (auto req = b.find("req"); req != b.end() && req->is_object()) {
          s.produce_requests += IntField(*req, "Produce");
        }
        AddStage(b, "int_latency", Stage::kIntLatency, &s.stages);
        AddStage(b, "outbuf_latency", Stage::kOutbufLatency, &s.stages);
        AddStage(b, "rtt", Stage::kRtt, &s.stages);
        AddStage(b, "throttle", Stage::kThrottle, &s.stages);
      }
    }
    if (auto topics = doc.find("topics"); topics != doc.end() && topics->is_object()) {
      for (const auto& [name, t] : topics->items()) {
        if (!t.is_object()) throw std::runtime_error("topic '" + name + "' is not an object");
        s.batch_bytes.Add(Window(t, "batchsize"));
        s.batch_records.Add(Window(t, "batchcnt"));
      }
    }
  } catch (const std::exception& e) {
    return Status::Error(std::string("statistics: ") + e.what());
  }
  *out = s;
  return Status::Ok();
}

void StatsAccumulator::Add(const RdkafkaStats& emit) {
  std::lock_guard<std::mutex> lock(mu_);
  snap_.cumulative = emit;
  snap_.cumulative.stages.clear();
  if (stage_history_.size() + emit.stages.size() > kMaxStageHistory) {
    stage_history_full_ = true;
  } else {
    stage_history_.insert(stage_history_.end(), emit.stages.begin(), emit.stages.end());
  }
  snap_.stage_history = stage_history_.size();
  snap_.batch_bytes.Add(emit.batch_bytes);
  snap_.batch_records.Add(emit.batch_records);
  ++snap_.emits;
}

void StatsAccumulator::NoteParseError(const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (snap_.parse_error.empty()) snap_.parse_error = message;
}

StatsAccumulator::Snapshot StatsAccumulator::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snap_;
}

std::int64_t StatsAccumulator::emits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snap_.emits;
}

std::vector<StageWindow> StatsAccumulator::StagesBetween(const Snapshot& before,
                                                         const Snapshot& after) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (stage_history_full_ || before.stage_history > after.stage_history ||
      after.stage_history > stage_history_.size())
    return {};
  const auto first = static_cast<std::ptrdiff_t>(before.stage_history);
  const auto last = static_cast<std::ptrdiff_t>(after.stage_history);
  return {stage_history_.begin() + first, stage_history_.begin() + last};
}

void StatsDelta::Add(const StatsDelta& o) {
  wire_bytes += o.wire_bytes;
  produce_requests += o.produce_requests;
  retries += o.retries;
  txmsg_bytes += o.txmsg_bytes;
  txmsgs += o.txmsgs;
  batch_bytes.Add(o.batch_bytes);
  batch_records.Add(o.batch_records);
  stages.insert(stages.end(), o.stages.begin(), o.stages.end());
}

StatsDelta Difference(const StatsAccumulator::Snapshot& before,
                      const StatsAccumulator::Snapshot& after) {
  StatsDelta d;
  d.wire_bytes = after.cumulative.tx_wire_bytes - before.cumulative.tx_wire_bytes;
  d.produce_requests = after.cumulative.produce_requests - before.cumulative.produce_requests;
  d.retries = after.cumulative.txretries - before.cumulative.txretries;
  d.txmsg_bytes = after.cumulative.txmsg_bytes - before.cumulative.txmsg_bytes;
  d.txmsgs = after.cumulative.txmsgs - before.cumulative.txmsgs;
  d.batch_bytes.sum = after.batch_bytes.sum - before.batch_bytes.sum;
  d.batch_bytes.cnt = after.batch_bytes.cnt - before.batch_bytes.cnt;
  d.batch_records.sum = after.batch_records.sum - before.batch_records.sum;
  d.batch_records.cnt = after.batch_records.cnt - before.batch_records.cnt;
  return d;
}

}  // namespace kbench
