#include "harness/librdkafka_api.h"

#include <dlfcn.h>

#include <array>
#include <cstdio>

namespace kbench {
namespace {

// Each release's CHANGELOG and headers: where the function or setting first appears.
constexpr std::array<FeatureRow, 7> kFeatures = {{
    {Feature::kMockCluster, "in-process mock cluster", 0x010300ff},
    {Feature::kMockTopicCreate, "rd_kafka_mock_topic_create", 0x010400ff},
    // Before 1.9.0 the mock refused compressed MessageSets (rdkafka_mock.c's Produce handler).
    {Feature::kMockCompressed, "in-process mock that takes compressed batches", 0x010900ff},
    {Feature::kTransactions, "transactions", 0x010400ff},
    {Feature::kBatchSize, "batch.size setting", 0x010500ff},
    {Feature::kSeekPartitions, "rd_kafka_seek_partitions", 0x010600ff},
    {Feature::kSslCertVerifyCallback, "rd_kafka_conf_set_ssl_cert_verify_cb", 0x010100ff},
}};

template <typename Fn>
void Resolve(Fn& fn, const char* name) {
  // RTLD_DEFAULT: the librdkafka.so.1 the loader already mapped for kbench.
  fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

OptionalFunctions ResolveAll() {
  OptionalFunctions f;
  Resolve(f.seek_partitions, "rd_kafka_seek_partitions");
  Resolve(f.error_string, "rd_kafka_error_string");
  Resolve(f.error_destroy, "rd_kafka_error_destroy");
  Resolve(f.error_txn_requires_abort, "rd_kafka_error_txn_requires_abort");
  Resolve(f.init_transactions, "rd_kafka_init_transactions");
  Resolve(f.begin_transaction, "rd_kafka_begin_transaction");
  Resolve(f.commit_transaction, "rd_kafka_commit_transaction");
  Resolve(f.abort_transaction, "rd_kafka_abort_transaction");
  Resolve(f.conf_set_ssl_cert_verify_cb, "rd_kafka_conf_set_ssl_cert_verify_cb");
  Resolve(f.mock_cluster_new, "rd_kafka_mock_cluster_new");
  Resolve(f.mock_cluster_destroy, "rd_kafka_mock_cluster_destroy");
  Resolve(f.mock_cluster_bootstraps, "rd_kafka_mock_cluster_bootstraps");
  Resolve(f.mock_topic_create, "rd_kafka_mock_topic_create");
  Resolve(f.mock_partition_set_leader, "rd_kafka_mock_partition_set_leader");
  return f;
}

}  // namespace

std::string VersionText(int v) {
  char text[32];
  std::snprintf(text, sizeof text, "%d.%d.%d", (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff);
  return text;
}

const FeatureRow* FeatureTable(std::size_t* size) {
  *size = kFeatures.size();
  return kFeatures.data();
}

const FeatureRow& FeatureOf(Feature f) {
  for (const FeatureRow& row : kFeatures) {
    if (row.feature == f) return row;
  }
  return kFeatures.front();  // unreachable: every Feature has a row
}

bool HasFeature(Feature f) { return rd_kafka_version() >= FeatureOf(f).since; }

std::string LacksFeature(Feature f) {
  if (HasFeature(f)) return "";
  const FeatureRow& row = FeatureOf(f);
  return "librdkafka " + VersionText(rd_kafka_version()) + " has no " + std::string(row.what) +
         " (since " + VersionText(row.since) + ")";
}

const OptionalFunctions& Optional() {
  static const OptionalFunctions functions = ResolveAll();
  return functions;
}

}  // namespace kbench
