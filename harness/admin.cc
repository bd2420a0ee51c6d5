#include "harness/admin.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/librdkafka_api.h"

namespace kbench {

StatusOr<rd_kafka_conf_t*> BuildConf(const ClientSettings& settings) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [key, value] : settings) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status::Error("client setting '" + key + "' rejected by librdkafka");
    }
  }
  return conf;
}

// ------------------------------------------------------------------ LogCapture

void LogCapture::Install(rd_kafka_conf_t* conf) {
  // The log callback has no opaque of its own, so the capture rides in the handle's
  // opaque; the producer driver, which needs that opaque, routes its logs itself.
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_log_cb(conf, &LogCapture::OnLog);
}

void LogCapture::OnLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  auto* self = static_cast<LogCapture*>(rd_kafka_opaque(rk));
  if (!self) return;
  std::lock_guard<std::mutex> lock(self->mu_);
  if (level <= 3) self->last_error_ = buf;
  if (std::strcmp(fac, "FAIL") == 0) {
    self->last_failure_ = buf;
    if (std::strstr(buf, "incorrect security.protocol")) ++self->protocol_mismatches_;
  }
  if (self->lines_.size() < 2000) self->lines_.emplace_back(fac, buf);
}

std::string LogCapture::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

std::string LogCapture::last_failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_failure_;
}

std::string LogCapture::last_certificate_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_certificate_error_;
}

bool LogCapture::security_failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!last_certificate_error_.empty()) return true;
  // librdkafka's guess "connecting to a SSL listener?" after a disconnect during ApiVersion:
  // once could be a broker going away; twice in a row is a plaintext client on TLS.
  if (protocol_mismatches_ >= 2) return true;
  for (const char* marker : {"SSL handshake failed", "SASL authentication error",
                             "certificate verify failed", "SASL handshake failed"}) {
    if (last_failure_.find(marker) != std::string::npos) return true;
  }
  return false;
}

namespace {
// OpenSSL's X509_V_ERR_* codes (x509_vfy.h; stable across 1.1 and 3.x) that a client meets
// when it connects to a broker, with the reason in OpenSSL's own words. kbench does not link
// OpenSSL itself; other codes are reported by number.
const char* X509ErrorReason(int code) {
  switch (code) {
    case 2:
      return "unable to get issuer certificate";
    case 9:
      return "certificate is not yet valid";
    case 10:
      return "certificate has expired";
    case 18:
      return "self-signed certificate";
    case 19:
      return "self-signed certificate in certificate chain";
    case 20:
      return "unable to get local issuer certificate (the broker's CA is not trusted)";
    case 21:
      return "unable to verify the first certificate";
    case 26:
      return "unsupported certificate purpose";
    case 62:
      return "hostname mismatch";
    case 63:
      return "email address mismatch";
    case 64:
      return "IP address mismatch";
    default:
      return nullptr;
  }
}
}  // namespace

int LogCapture::VerifyCertificate(rd_kafka_t*, const char* broker_name, int32_t, int* x509_error,
                                  int depth, const char*, size_t, char* errstr, size_t errstr_size,
                                  void* opaque) {
  if (*x509_error == 0) return 1;  // OpenSSL accepted it: so do we
  const char* reason = X509ErrorReason(*x509_error);
  std::string text = std::string(reason ? reason : "certificate rejected") + " (X509 error " +
                     std::to_string(*x509_error) + " at depth " + std::to_string(depth) +
                     ", broker " + (broker_name ? broker_name : "?") + ")";
  std::snprintf(errstr, errstr_size, "%s", text.c_str());
  if (auto* self = static_cast<LogCapture*>(opaque)) {
    std::lock_guard<std::mutex> lock(self->mu_);
    if (self->last_certificate_error_.empty()) self->last_certificate_error_ = text;
  }
  return 0;
}

std::vector<std::string> LogCapture::lines_with(const std::string& facility) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [fac, text] : lines_) {
    if (fac == facility) out.push_back(text);
  }
  return out;
}

// ------------------------------------------------------------------ AdminClient

StatusOr<std::unique_ptr<AdminClient>> AdminClient::Create(const ClientSettings& settings,
                                                           bool diagnose_tls) {
  std::unique_ptr<AdminClient> admin(new AdminClient());
  admin->log_ = std::make_unique<LogCapture>();
  StatusOr<rd_kafka_conf_t*> conf = BuildConf(settings);
  if (!conf) return conf.status();
  admin->log_->Install(*conf);
  // Fails only in a build without SSL, where no certificate is ever checked anyway.
  if (diagnose_tls && Optional().conf_set_ssl_cert_verify_cb) {
    Optional().conf_set_ssl_cert_verify_cb(*conf, &LogCapture::VerifyCertificate);
  }
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, *conf, err, sizeof err);
  if (!rk) {
    rd_kafka_conf_destroy(*conf);
    return Status::Error(std::string("cannot create admin client: ") + err);
  }
  admin->rk_.reset(rk);
  return admin;
}

namespace {

Status TopicResults(const rd_kafka_topic_result_t* const* results, std::size_t count,
                    const std::string& what, bool ok_if_missing) {
  for (std::size_t i = 0; i < count; ++i) {
    rd_kafka_resp_err_t err = rd_kafka_topic_result_error(results[i]);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    if (ok_if_missing && err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) continue;
    const char* msg = rd_kafka_topic_result_error_string(results[i]);
    return Status::Error(what + " '" + rd_kafka_topic_result_name(results[i]) +
                         "' failed: " + (msg ? msg : rd_kafka_err2str(err)));
  }
  return Status::Ok();
}

// One topic admin operation: `submit(opts, queue)` sends it, `results(event, &n)` reads the
// per-topic results of its answer, which is awaited on a private queue for the timeout
// (plus a second for the request itself).
template <class Submit, class Results>
Status RunTopicOp(rd_kafka_t* rk, rd_kafka_admin_op_t op, const std::string& what,
                  const std::string& topic, std::chrono::milliseconds timeout, bool ok_if_missing,
                  Submit submit, Results results) {
  char err[512];
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, op);
  rd_kafka_AdminOptions_set_operation_timeout(opts, static_cast<int>(timeout.count()), err,
                                              sizeof err);
  rd_kafka_AdminOptions_set_request_timeout(opts, static_cast<int>(timeout.count()), err,
                                            sizeof err);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  submit(opts, queue);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, static_cast<int>(timeout.count()) + 1000);
  Status status;
  if (!ev) {
    status = Status::Error(what + " '" + topic + "': no answer within " +
                           std::to_string(timeout.count()) + " ms");
  } else if (rd_kafka_event_error(ev)) {
    status = Status::Error(what + " '" + topic + "': " + rd_kafka_event_error_string(ev));
  } else {
    std::size_t n = 0;
    const rd_kafka_topic_result_t* const* res = results(ev, &n);
    status = TopicResults(res, n, what, ok_if_missing);
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(queue);
  rd_kafka_AdminOptions_destroy(opts);
  return status;
}

}  // namespace

Status AdminClient::CreateTopic(const std::string& topic, int partitions, int replication,
                                std::chrono::milliseconds timeout,
                                const std::vector<std::pair<std::string, std::string>>& configs) {
  char err[512];
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(topic.c_str(), partitions, replication, err, sizeof err);
  if (!nt) return Status::Error("create topic '" + topic + "': " + err);
  for (const auto& [name, value] : configs) {
    if (rd_kafka_resp_err_t e = rd_kafka_NewTopic_set_config(nt, name.c_str(), value.c_str())) {
      rd_kafka_NewTopic_destroy(nt);
      return Status::Error("create topic '" + topic + "': config " + name + ": " +
                           rd_kafka_err2str(e));
    }
  }
  Status status = RunTopicOp(
      rk_.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS, "create topic", topic, timeout, false,
      [&](rd_kafka_AdminOptions_t* opts, rd_kafka_queue_t* queue) {
        rd_kafka_CreateTopics(rk_.get(), &nt, 1, opts, queue);
      },
      [](rd_kafka_event_t* ev, std::size_t* n) {
        return rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), n);
      });
  rd_kafka_NewTopic_destroy(nt);
  if (!status.ok()) return status;

  // CreateTopics returns once the controller accepted it; wait until the leaders are
  // known so the first produce does not pay for metadata propagation.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_.get(), topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk_.get(), 0, rkt, &md, 5000);
    bool ready = false;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 && md->topics[0].err == 0 &&
        md->topics[0].partition_cnt == partitions) {
      ready = true;
      for (int p = 0; p < md->topics[0].partition_cnt; ++p) {
        if (md->topics[0].partitions[p].leader < 0 || md->topics[0].partitions[p].err)
          ready = false;
      }
    }
    if (md) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    if (ready) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::Error("topic '" + topic + "' created but its partitions have no leader after " +
                       std::to_string(timeout.count()) + " ms");
}

Status AdminClient::DeleteTopic(const std::string& topic, std::chrono::milliseconds timeout) {
  rd_kafka_DeleteTopic_t* dt = rd_kafka_DeleteTopic_new(topic.c_str());
  Status status = RunTopicOp(
      rk_.get(), RD_KAFKA_ADMIN_OP_DELETETOPICS, "delete topic", topic, timeout, true,
      [&](rd_kafka_AdminOptions_t* opts, rd_kafka_queue_t* queue) {
        rd_kafka_DeleteTopics(rk_.get(), &dt, 1, opts, queue);
      },
      [](rd_kafka_event_t* ev, std::size_t* n) {
        return rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), n);
      });
  rd_kafka_DeleteTopic_destroy(dt);
  return status;
}

namespace {
// Clients abandoned with a librdkafka call still running in them: kept for the life of the
// process, reachable from a global, so nothing is freed under that call (and leak
// checkers count them as live).
struct Abandoned {
  rd_kafka_t* rk;
  LogCapture* log;
};
std::mutex abandoned_mu;
std::vector<Abandoned>* abandoned_clients = nullptr;
}  // namespace

AdminClient::~AdminClient() {
  if (!abandoned_) return;
  std::lock_guard<std::mutex> lock(abandoned_mu);
  if (abandoned_clients == nullptr) abandoned_clients = new std::vector<Abandoned>();
  abandoned_clients->push_back({rk_.release(), log_.release()});
}

// librdkafka 2.0.2's rd_kafka_query_watermark_offsets can outlive its timeout by minutes:
// while the leader's connection keeps failing, its response callback retries on every
// broker state change with no deadline (rd_kafka_query_wmark_offsets_resp_cb, rdkafka.c),
// and its wait loop has none either. A dead broker must fail a benchmark, not hang the run,
// so each call runs on a thread of its own and is abandoned, with this client, if it has
// not answered a grace period after its timeout.
rd_kafka_resp_err_t AdminClient::QueryHighWatermark(const std::string& topic, int partition,
                                                    std::chrono::milliseconds timeout,
                                                    std::int64_t* high) {
  struct Answer {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    std::int64_t high = 0;
  };
  constexpr auto kGrace = std::chrono::seconds(5);
  auto answer = std::make_shared<Answer>();
  std::thread([rk = rk_.get(), topic, partition, ms = static_cast<int>(timeout.count()), answer] {
    std::int64_t low = 0, hi = 0;
    rd_kafka_resp_err_t err =
        rd_kafka_query_watermark_offsets(rk, topic.c_str(), partition, &low, &hi, ms);
    std::lock_guard<std::mutex> lock(answer->mu);
    answer->err = err;
    answer->high = hi;
    answer->done = true;
    answer->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(answer->mu);
  if (!answer->cv.wait_for(lock, timeout + kGrace, [&] { return answer->done; })) {
    abandoned_ = true;
    return RD_KAFKA_RESP_ERR__TIMED_OUT;
  }
  *high = answer->high;
  return answer->err;
}

StatusOr<std::int64_t> AdminClient::EndOffsetSum(const std::string& topic, int partitions,
                                                 std::chrono::milliseconds timeout) {
  StatusOr<std::vector<std::int64_t>> ends = EndOffsets(topic, partitions, timeout);
  if (!ends) return ends.status();
  std::int64_t sum = 0;
  for (std::int64_t end : *ends) sum += end;
  return sum;
}

namespace {

// Before 1.8.0, rd_kafka_query_watermark_offsets asks with ListOffsets v0, which Kafka 4.0
// removed (KIP-896); the broker's answer then reads as a bad message.
std::string EndOffsetHint(rd_kafka_resp_err_t err) {
  constexpr int kListOffsetsV1Since = 0x01080000;  // librdkafka 1.8.0
  if (err != RD_KAFKA_RESP_ERR__BAD_MSG || rd_kafka_version() >= kListOffsetsV1Since) return "";
  return " (librdkafka " + std::string(rd_kafka_version_str()) +
         " asks end offsets with ListOffsets v0, which Kafka 4.0 removed: run it against Kafka "
         "3.9.1, e.g. scripts/kafka start --version 3.9.1)";
}

}  // namespace

StatusOr<std::vector<std::int64_t>> AdminClient::EndOffsets(const std::string& topic,
                                                            int partitions,
                                                            std::chrono::milliseconds timeout) {
  if (abandoned_) {
    return Status::Error("end offsets of " + topic +
                         ": an earlier query never returned (is the broker down?)");
  }
  std::vector<std::int64_t> result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int p = 0; p < partitions; ++p) {
    std::int64_t high = 0;
    rd_kafka_resp_err_t err;
    // Right after a topic is created (or a leader moves) the answer can be "not leader"
    // until metadata settles: those are retriable, so retry them until the deadline.
    for (;;) {
      err = QueryHighWatermark(topic, p, timeout, &high);
      if (abandoned_) {
        return Status::Error("end offset of " + topic + "[" + std::to_string(p) +
                             "]: no answer from librdkafka within " +
                             std::to_string(timeout.count()) +
                             " ms and a grace period (is the broker down?)");
      }
      bool retriable = err == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
                       err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
                       err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
                       err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
      if (!retriable || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (err) {
      return Status::Error("end offset of " + topic + "[" + std::to_string(p) +
                           "]: " + rd_kafka_err2str(err) + EndOffsetHint(err));
    }
    result.push_back(high);
  }
  return result;
}

StatusOr<int> AdminClient::BrokerCount(std::chrono::milliseconds timeout) {
  const rd_kafka_metadata_t* md = nullptr;
  // Asked in steps of at most a second, so that a wrong password or an untrusted
  // certificate ends the wait at once instead of after the whole timeout.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    err = rd_kafka_metadata(rk_.get(), 0, nullptr, &md,
                            static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
    if (!err || log_->security_failure()) break;
    // A transport failure returns at once; do not spin on it.
    if (err != RD_KAFKA_RESP_ERR__TIMED_OUT)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (err) {
    // The certificate's reason first (librdkafka says only "certificate verify failed"),
    // then the connection failure, then whatever error was logged last.
    std::string detail = log_->last_failure();
    if (detail.empty()) detail = log_->last_error();
    if (std::string cert = log_->last_certificate_error(); !cert.empty()) {
      detail = "certificate rejected: " + cert + (detail.empty() ? "" : "; " + detail);
    }
    return Status::Error(std::string(rd_kafka_err2str(err)) +
                         (detail.empty() ? "" : " (" + detail + ")"));
  }
  const int count = md->broker_cnt;
  rd_kafka_metadata_destroy(md);
  return count;
}

StatusOr<int> AdminClient::PartitionCount(const std::string& topic,
                                          std::chrono::milliseconds timeout) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_.get(), topic.c_str(), nullptr);
  if (!rkt) return Status::Error("topic " + topic + ": " + rd_kafka_err2str(rd_kafka_last_error()));
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err =
      rd_kafka_metadata(rk_.get(), 0, rkt, &md, static_cast<int>(timeout.count()));
  rd_kafka_topic_destroy(rkt);
  if (err) return Status::Error("metadata of topic " + topic + ": " + rd_kafka_err2str(err));
  if (md->topic_cnt != 1 || md->topics[0].err) {
    std::string why = md->topic_cnt == 1 ? rd_kafka_err2str(md->topics[0].err) : "no metadata";
    rd_kafka_metadata_destroy(md);
    return Status::Error("topic " + topic + " cannot be read (" + why + ")");
  }
  const int count = md->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(md);
  return count;
}

}  // namespace kbench
