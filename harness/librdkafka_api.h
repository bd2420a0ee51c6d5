// What kbench uses of librdkafka that the oldest release it runs against (1.0.0) lacks: one
// row per feature, with the release it appeared in, and the C functions it brings, looked
// up in the loaded library at run time (dlsym). So one kbench binary, built against any
// headers from 2.0 on, loads against every release from 1.0.0 (LD_LIBRARY_PATH): it never
// references a symbol that an older librdkafka.so.1 lacks, and a row whose feature the
// loaded release lacks is not run, with the reason (LacksFeature).
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <string>
#include <string_view>

namespace kbench {

enum class Feature {
  kMockCluster,           // the in-process mock cluster (rd_kafka_mock_cluster_new)
  kMockTopicCreate,       // rd_kafka_mock_topic_create
  kMockCompressed,        // a mock that accepts compressed batches
  kTransactions,          // rd_kafka_init_transactions and the rd_kafka_error_t API
  kBatchSize,             // the batch.size setting (before: batch.num.messages alone)
  kSeekPartitions,        // rd_kafka_seek_partitions (before: rd_kafka_seek per partition)
  kSslCertVerifyCallback  // rd_kafka_conf_set_ssl_cert_verify_cb
};

struct FeatureRow {
  Feature feature;
  std::string_view what;  // what "librdkafka X has no ..." names: "transactions", ...
  int since;              // rd_kafka_version() of the first release that has it
};

// "1.4.0" for rd_kafka_version()'s 0x010400ff.
std::string VersionText(int version);

// The table, one row per Feature (also in `kbench --describe=json`).
const FeatureRow* FeatureTable(std::size_t* size);
const FeatureRow& FeatureOf(Feature f);

// True when the loaded librdkafka (rd_kafka_version()) has the feature.
bool HasFeature(Feature f);
// "" when the loaded librdkafka has the feature, else why a row that needs it is not run:
// "librdkafka 1.3.0 has no transactions (since 1.4.0)".
std::string LacksFeature(Feature f);

// The functions newer than 1.0.0 that kbench calls, resolved once per process from the
// loaded library; each is null where the loaded release lacks it. Callers check
// HasFeature (or the pointer) first.
struct OptionalFunctions {
  decltype(&rd_kafka_seek_partitions) seek_partitions = nullptr;
  decltype(&rd_kafka_error_string) error_string = nullptr;
  decltype(&rd_kafka_error_destroy) error_destroy = nullptr;
  decltype(&rd_kafka_error_txn_requires_abort) error_txn_requires_abort = nullptr;
  decltype(&rd_kafka_init_transactions) init_transactions = nullptr;
  decltype(&rd_kafka_begin_transaction) begin_transaction = nullptr;
  decltype(&rd_kafka_commit_transaction) commit_transaction = nullptr;
  decltype(&rd_kafka_abort_transaction) abort_transaction = nullptr;
  decltype(&rd_kafka_conf_set_ssl_cert_verify_cb) conf_set_ssl_cert_verify_cb = nullptr;
  decltype(&rd_kafka_mock_cluster_new) mock_cluster_new = nullptr;
  decltype(&rd_kafka_mock_cluster_destroy) mock_cluster_destroy = nullptr;
  decltype(&rd_kafka_mock_cluster_bootstraps) mock_cluster_bootstraps = nullptr;
  decltype(&rd_kafka_mock_topic_create) mock_topic_create = nullptr;
  decltype(&rd_kafka_mock_partition_set_leader) mock_partition_set_leader = nullptr;
};

// The loaded library's functions. The library is fixed for the life of the process (the
// dynamic loader picked it at start), so they are looked up once.
const OptionalFunctions& Optional();

}  // namespace kbench
