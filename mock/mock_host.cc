// kbench-mock: librdkafka's mock cluster hosted in a process of its own, so that every
// librdkafka release kbench runs against (1.0.0 on, also those without a mock) meets the
// same cluster code: this program's librdkafka, pinned (the system's), reached by bootstrap
// address. kbench starts it (--mock=process) with LD_LIBRARY_PATH removed and drives it
// over stdin/stdout, one line each way:
//
//   started:  "bootstrap HOST:PORT,...<TAB>librdkafka VERSION"
//   "topic NAME PARTITIONS REPLICATION"  ->  "ok" or "error TEXT"
//                                             (leaders round-robin over the first 3 brokers)
//   end of input                         ->  the cluster is destroyed, exit 0
//
// Nothing is timed here. A bad argument or a cluster that cannot start: a message on
// stderr and exit 2 (arguments) or 1.

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "harness/mock_ops.h"

namespace {

int Usage(const char* why) {
  std::cerr << "kbench-mock: " << why
            << "\nUsage: kbench-mock [--brokers N]  (N 1-32, default 3)\n";
  return 2;
}

// Mirrors the embedded mock's set-up (fixtures/cluster.cc), so the two differ only in the
// process that hosts the brokers.
std::string CreateTopic(rd_kafka_mock_cluster_t* mock, int brokers, const std::string& name,
                        int partitions, int replication) {
  if (replication > brokers) return "replication factor exceeds the mock's brokers";
  if (rd_kafka_resp_err_t e =
          rd_kafka_mock_topic_create(mock, name.c_str(), partitions, replication)) {
    return rd_kafka_err2str(e);
  }
  const int leaders = std::min(brokers, 3);
  for (int p = 0; p < partitions; ++p) {
    kbench::PauseBeforeNextMockCall();
    if (rd_kafka_resp_err_t e =
            rd_kafka_mock_partition_set_leader(mock, name.c_str(), p, p % leaders + 1)) {
      return "partition " + std::to_string(p) + " leader: " + rd_kafka_err2str(e);
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  int brokers = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--brokers" && i + 1 < argc) {
      brokers = std::atoi(argv[++i]);
      if (brokers < 1 || brokers > 32) return Usage("--brokers must be 1 to 32");
    } else if (a == "-h" || a == "--help") {
      Usage("librdkafka's mock cluster in a process of its own");
      return 0;
    } else {
      return Usage(("unknown argument '" + a + "'").c_str());
    }
  }
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
  rd_kafka_t* host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!host) {
    std::cerr << "kbench-mock: cannot create the mock's handle: " << err << "\n";
    return 1;
  }
  rd_kafka_mock_cluster_t* mock = rd_kafka_mock_cluster_new(host, brokers);
  if (!mock) {
    std::cerr << "kbench-mock: rd_kafka_mock_cluster_new failed\n";
    rd_kafka_destroy(host);
    return 1;
  }
  std::cout << "bootstrap " << rd_kafka_mock_cluster_bootstraps(mock) << "\tlibrdkafka "
            << rd_kafka_version_str() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string verb, name;
    int partitions = 0, replication = 0;
    if (!(in >> verb >> name >> partitions >> replication) || verb != "topic" || partitions < 1 ||
        replication < 1) {
      std::cout << "error expected: topic NAME PARTITIONS REPLICATION" << std::endl;
      continue;
    }
    std::string why = CreateTopic(mock, brokers, name, partitions, replication);
    std::cout << (why.empty() ? "ok" : "error " + why) << std::endl;
  }
  rd_kafka_mock_cluster_destroy(mock);
  rd_kafka_destroy(host);
  return 0;
}
