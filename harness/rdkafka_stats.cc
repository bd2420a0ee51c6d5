#include "harness/rdkafka_stats.h"

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

}  // namespace

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

void StatsDelta::Add(const StatsDelta& o) {
  wire_bytes += o.wire_bytes;
  produce_requests += o.produce_requests;
  retries += o.retries;
  txmsg_bytes += o.txmsg_bytes;
  txmsgs += o.txmsgs;
  batch_bytes.Add(o.batch_bytes);
  batch_records.Add(o.batch_records);
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
