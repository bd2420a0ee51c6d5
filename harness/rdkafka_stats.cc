#include "harness/rdkafka_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <simdjson.h>

namespace kbench {
namespace {

// simdjson's On-Demand API, not a DOM: an emit names every partition of every topic and
// broker (at 1000 partitions, megabytes every statistics.interval.ms), and kbench reads a
// few dozen numbers of it. Building nlohmann::json's tree of it cost the producing thread
// (which serves the stats callback) about 16 % of its throughput at 1000 partitions;
// On-Demand skips what is not asked for.
namespace od = simdjson::ondemand;

class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Error messages name what was being read ("field 'txbytes'", "broker 'b/1'"); they are
// built only when something is wrong, not for every value of every emit.
[[noreturn]] void Fail(std::string_view kind, std::string_view name, std::string_view what) {
  throw ParseError(std::string(kind) + " '" + std::string(name) + "' " + std::string(what));
}

void Check(simdjson::error_code e, std::string_view kind, std::string_view name) {
  if (e) Fail(kind, name, std::string(": ") + simdjson::error_message(e));
}

od::json_type Type(od::value v, std::string_view kind, std::string_view name) {
  od::json_type type = od::json_type::null;
  Check(v.type().get(type), kind, name);
  return type;
}

// False for null (librdkafka writes no nulls, but a missing value is not news: it reads as
// 0); an error for anything else that is not a number.
bool IsNumber(od::value v, std::string_view key) {
  const od::json_type type = Type(v, "field", key);
  if (type == od::json_type::null) return false;
  if (type != od::json_type::number) Fail("field", key, "is not a number");
  return true;
}

double Number(od::value v, std::string_view key) {
  double d = 0;
  if (IsNumber(v, key)) Check(v.get_double().get(d), "field", key);
  return d;
}

// Counters are integers: read exactly (a double holds only 53 bits).
std::int64_t Int(od::value v, std::string_view key) {
  if (!IsNumber(v, key)) return 0;
  od::number n;
  Check(v.get_number().get(n), "field", key);
  if (n.is_int64()) return n.get_int64();
  if (n.is_uint64()) return static_cast<std::int64_t>(n.get_uint64());
  return static_cast<std::int64_t>(n.get_double());
}

// Calls f(key, value) for each field of the object v (kind 'name'), in document order;
// values f leaves alone are skipped without being parsed.
template <typename F>
void Fields(od::value v, std::string_view kind, std::string_view name, F&& f) {
  od::object o;
  if (v.get_object().get(o)) Fail(kind, name, "is not an object");
  for (auto field : o) {
    std::string_view key;
    Check(field.unescaped_key().get(key), kind, name);
    od::value x;
    Check(field.value().get(x), kind, name);
    f(key, x);
  }
}

// An optional object (brokers, topics, req): absent or not an object, nothing to read.
template <typename F>
void Section(od::value v, std::string_view key, F&& f) {
  if (Type(v, "section", key) == od::json_type::object) Fields(v, "section", key, f);
}

WindowTotals Window(od::value v, std::string_view key) {
  WindowTotals w;
  Fields(v, "window", key, [&](std::string_view k, od::value x) {
    if (k == "sum") w.sum = Number(x, k);
    if (k == "cnt") w.cnt = Int(x, k);
  });
  return w;
}

// One broker window as quantile points; windows without records are left out.
void AddStage(od::value v, std::string_view key, Stage stage, std::vector<StageWindow>* out) {
  static constexpr std::array<std::string_view, 8> kPoints = {"min", "p50", "p75",    "p90",
                                                              "p95", "p99", "p99_99", "max"};
  StageWindow w;
  w.stage = stage;
  Fields(v, "window", key, [&](std::string_view k, od::value x) {
    if (k == "cnt") {
      w.cnt = Int(x, k);
      return;
    }
    for (std::size_t i = 0; i < kPoints.size(); ++i) {
      if (k == kPoints[i]) w.x[i] = Number(x, k);
    }
  });
  if (w.cnt <= 0) return;
  // Percentiles are bucket-rounded (HdrHistogram) and may pass the exact max: keep the
  // points in order, so each window's quantile function is monotone.
  for (std::size_t i = 1; i < w.x.size(); ++i) w.x[i] = std::max(w.x[i], w.x[i - 1]);
  out->push_back(w);
}

void Broker(od::value v, std::string_view name, RdkafkaStats* s) {
  Fields(v, "broker", name, [&](std::string_view k, od::value x) {
    if (k == "txbytes") {
      s->tx_wire_bytes += Int(x, k);
    } else if (k == "txretries") {
      s->txretries += Int(x, k);
    } else if (k == "txerrs") {
      s->txerrs += Int(x, k);
    } else if (k == "wakeups") {
      s->wakeups += Int(x, k);
      s->has_wakeups = true;
    } else if (k == "req") {
      Section(x, k, [&](std::string_view api, od::value n) {
        if (api != "Produce") return;
        s->produce_requests += Int(n, api);
        s->has_produce_requests = true;
      });
    } else if (k == "int_latency") {
      AddStage(x, k, Stage::kIntLatency, &s->stages);
    } else if (k == "outbuf_latency") {
      AddStage(x, k, Stage::kOutbufLatency, &s->stages);
    } else if (k == "rtt") {
      AddStage(x, k, Stage::kRtt, &s->stages);
    } else if (k == "throttle") {
      AddStage(x, k, Stage::kThrottle, &s->stages);
    }
  });
}

void Topic(od::value v, std::string_view name, RdkafkaStats* s) {
  Fields(v, "topic", name, [&](std::string_view k, od::value x) {
    if (k == "batchsize") s->batch_bytes.Add(Window(x, k));
    if (k == "batchcnt") s->batch_records.Add(Window(x, k));
  });
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

struct StatsParser::Impl {
  std::mutex mu;
  od::parser parser;
  std::string buffer;  // the emit, copied with the padding simdjson reads past its end
};

StatsParser::StatsParser() : impl_(std::make_unique<Impl>()) {}
StatsParser::~StatsParser() = default;

StatusOr<RdkafkaStats> StatsParser::Parse(std::string_view text) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::string& buf = impl_->buffer;
  buf.assign(text);
  buf.resize(text.size() + simdjson::SIMDJSON_PADDING);
  RdkafkaStats s;
  try {
    od::document doc;
    if (auto e =
            impl_->parser.iterate(simdjson::padded_string_view(buf.data(), text.size(), buf.size()))
                .get(doc)) {
      throw ParseError(std::string("not JSON: ") + simdjson::error_message(e));
    }
    od::value top;
    if (doc.get_value().get(top)) throw ParseError("not a JSON object");
    Fields(top, "document", "top level", [&](std::string_view k, od::value x) {
      if (k == "txmsgs") {
        s.txmsgs = Int(x, k);
      } else if (k == "txmsg_bytes") {
        s.txmsg_bytes = Int(x, k);
      } else if (k == "rxmsgs") {
        s.rxmsgs = Int(x, k);
      } else if (k == "rxmsg_bytes") {
        s.rxmsg_bytes = Int(x, k);
      } else if (k == "brokers") {
        Section(x, k, [&](std::string_view name, od::value b) { Broker(b, name, &s); });
      } else if (k == "topics") {
        Section(x, k, [&](std::string_view name, od::value t) { Topic(t, name, &s); });
      }
    });
  } catch (const ParseError& e) {
    return Status::Error(std::string("statistics: ") + e.what());
  }
  return s;
}

StatusOr<RdkafkaStats> ParseRdkafkaStats(std::string_view text) {
  StatsParser parser;
  return parser.Parse(text);
}

void StatsAccumulator::AddEmit(std::string_view json) {
  if (StatusOr<RdkafkaStats> emit = parser_.Parse(json); emit.ok()) {
    Add(*emit);
  } else {
    NoteParseError(emit.message());
  }
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
  if (o.parts > 0) {  // an empty delta adds nothing, not an absence
    has_produce_requests = (parts == 0 || has_produce_requests) && o.has_produce_requests;
    has_wakeups = (parts == 0 || has_wakeups) && o.has_wakeups;
    parts += o.parts;
  }
  wire_bytes += o.wire_bytes;
  produce_requests += o.produce_requests;
  wakeups += o.wakeups;
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
  d.has_produce_requests =
      before.cumulative.has_produce_requests && after.cumulative.has_produce_requests;
  d.wakeups = after.cumulative.wakeups - before.cumulative.wakeups;
  d.has_wakeups = before.cumulative.has_wakeups && after.cumulative.has_wakeups;
  d.parts = 1;
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
