#pragma once

// Small, blocking wrappers over librdkafka for what benchmarks need around the timed
// work: building a configuration, creating/deleting topics (Admin API), end offsets
// (watermarks) and a cluster probe. Nothing here runs inside a timed loop.

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "harness/status.h"

namespace kbench {

using ClientSettings = std::vector<std::pair<std::string, std::string>>;

// Applies settings in order (a later key overrides an earlier one); the caller owns the
// conf. Fails naming the key (values are not echoed: they may be secrets).
StatusOr<rd_kafka_conf_t*> BuildConf(const ClientSettings& settings);

// Owns an rd_kafka_t (destroyed on scope exit).
struct RdKafkaDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using RdKafkaPtr = std::unique_ptr<rd_kafka_t, RdKafkaDeleter>;

// Captures librdkafka's log lines instead of letting them reach stderr unasked; keeps
// the last error-level line for messages and the debug lines a caller asked for.
class LogCapture {
 public:
  // Sets the conf's log_cb and its opaque (so the handle must not use the opaque itself).
  void Install(rd_kafka_conf_t* conf);
  std::string last_error() const;
  // The last connection failure librdkafka logged (facility FAIL, any level: a plaintext
  // client disconnected by a TLS listener is only logged at INFO), "" if none.
  std::string last_failure() const;
  // The last TLS certificate rejected by OpenSSL, as "reason (X509 error N at depth D)", when
  // the handle verifies through VerifyCertificate; "" if none.
  std::string last_certificate_error() const;
  // True once a failure that waiting does not cure was seen: the TLS handshake failed, a
  // certificate was rejected or SASL authentication failed.
  bool security_failure() const;
  std::vector<std::string> lines_with(const std::string& facility) const;

  // An ssl.certificate.verify_cb that accepts exactly what OpenSSL accepted and, for a
  // rejected certificate, records and reports why: librdkafka 2.0.2's own message says only
  // "certificate verify failed", also for a hostname mismatch. Needs this capture as the
  // handle's opaque (Install).
  static int VerifyCertificate(rd_kafka_t* rk, const char* broker_name, int32_t broker_id,
                               int* x509_error, int depth, const char* buf, size_t size,
                               char* errstr, size_t errstr_size, void* opaque);

 private:
  static void OnLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf);
  mutable std::mutex mu_;
  std::string last_error_;
  std::string last_failure_;
  std::string last_certificate_error_;
  int protocol_mismatches_ = 0;
  std::vector<std::pair<std::string, std::string>> lines_;  // facility, text
};

class AdminClient {
 public:
  // `settings` must include bootstrap.servers. `diagnose_tls` installs
  // LogCapture::VerifyCertificate, so that a rejected certificate is named.
  static StatusOr<std::unique_ptr<AdminClient>> Create(const ClientSettings& settings,
                                                       bool diagnose_tls = false);

  // `configs`: topic configs (compression.type, ...), set at creation.
  Status CreateTopic(const std::string& topic, int partitions, int replication,
                     std::chrono::milliseconds timeout,
                     const std::vector<std::pair<std::string, std::string>>& configs = {});
  Status DeleteTopic(const std::string& topic, std::chrono::milliseconds timeout);
  // Sum over partitions of the high watermark (end offset). Returns within about twice
  // `timeout` even when librdkafka does not (see admin.cc).
  StatusOr<std::int64_t> EndOffsetSum(const std::string& topic, int partitions,
                                      std::chrono::milliseconds timeout);
  // The high watermark (end offset) of each partition, indexed by partition.
  StatusOr<std::vector<std::int64_t>> EndOffsets(const std::string& topic, int partitions,
                                                 std::chrono::milliseconds timeout);
  // Number of brokers in the cluster metadata. Gives up before `timeout` once a TLS or
  // SASL failure was logged (retrying cannot cure it); the error then names that failure.
  StatusOr<int> BrokerCount(std::chrono::milliseconds timeout);
  // Number of partitions of an existing topic (an error naming it when it does not exist).
  StatusOr<int> PartitionCount(const std::string& topic, std::chrono::milliseconds timeout);

  rd_kafka_t* handle() const { return rk_.get(); }
  const LogCapture& log() const { return *log_; }

  AdminClient(const AdminClient&) = delete;
  AdminClient& operator=(const AdminClient&) = delete;
  ~AdminClient();

 private:
  AdminClient() = default;
  // One rd_kafka_query_watermark_offsets call, abandoned if it outlives its timeout.
  rd_kafka_resp_err_t QueryHighWatermark(const std::string& topic, int partition,
                                         std::chrono::milliseconds timeout, std::int64_t* high);
  std::unique_ptr<LogCapture> log_;
  RdKafkaPtr rk_;
  // A librdkafka call was abandoned while still running: the handle and the log capture
  // it reports to are leaked, never freed under it.
  bool abandoned_ = false;
};

}  // namespace kbench
