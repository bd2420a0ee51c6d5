#pragma once

// What the brokers paid, on a cluster that kbench's own scripts/kafka started: the broker
// JVMs' CPU (user + system, /proc/PID/stat) and the bytes their log segments grew by (the
// sizes of the *.log files under each node's log directory). scripts/kafka keeps, in its
// state directory, node-N/pid and node-N/data (the log.dirs) and the bootstrap address it
// printed; a cluster is only measured when that address is the one benchmarked and every
// pid is still a broker JVM running that node's server.properties. Anyone else's cluster
// is not measured, and Open says why (the run context carries the reason).

#include <cstdint>
#include <string>
#include <vector>

#include "harness/status.h"

namespace kbench {

class BrokerCost {
 public:
  struct Node {
    int pid = 0;
    std::string data_dir;
  };
  struct Snapshot {
    double cpu_s = 0;            // summed over the brokers
    std::int64_t log_bytes = 0;  // summed sizes of their *.log segment files
    bool complete = true;        // false when a broker's /proc entry was gone
  };

  // `state_dir`: scripts/kafka's --dir; `bootstrap`: the address benchmarked.
  static StatusOr<BrokerCost> Open(const std::string& state_dir, const std::string& bootstrap);

  Snapshot Take() const;
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  std::vector<Node> nodes_;
};

// The sum of st_size of regular files named *.log under `dir` (recursively); files that
// vanish while walking (segment deletion) are skipped.
std::int64_t LogSegmentBytes(const std::string& dir);
// User + system CPU seconds of process `pid` (all its threads, live and exited), or -1.
double ProcessCpuSeconds(int pid);

}  // namespace kbench
