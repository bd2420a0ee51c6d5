#include "harness/broker_cost.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace kbench {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::set<std::string> SplitAddresses(std::string text) {
  std::set<std::string> out;
  std::replace(text.begin(), text.end(), '\n', ',');
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.starts_with("PLAINTEXT://")) item.erase(0, 12);
    if (!item.empty()) out.insert(item);
  }
  return out;
}

}  // namespace

double ProcessCpuSeconds(int pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  // Fields after the command name (which may hold spaces and parentheses): state is
  // field 3; utime and stime are fields 14 and 15, i.e. the 12th and 13th after it.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(stat.substr(close + 1));
  std::string field;
  long long utime = -1, stime = -1;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  if (utime < 0 || stime < 0) return -1;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::int64_t LogSegmentBytes(const std::string& dir) {
  std::int64_t total = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // A deleted topic's partitions are renamed <topic>-<p>.<id>-delete at once and removed
    // a minute later (file.delete.delay.ms): counted, an earlier row's topic vanishing inside
    // this row's window made its log growth negative.
    if (it->path().filename().string().ends_with("-delete")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().extension() != ".log") continue;
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    const auto size = it->file_size(size_ec);
    if (!size_ec) total += static_cast<std::int64_t>(size);
  }
  return total;
}

StatusOr<BrokerCost> BrokerCost::Open(const std::string& state_dir, const std::string& bootstrap) {
  const fs::path dir(state_dir);
  if (!fs::exists(dir / ".kbench-kafka"))
    return Status::Error(state_dir + " is not a scripts/kafka state directory");
  const std::set<std::string> started = SplitAddresses(ReadFile(dir / "bootstrap"));
  if (started.empty()) return Status::Error("no cluster is running in " + state_dir);
  if (started != SplitAddresses(bootstrap)) {
    return Status::Error("the cluster benchmarked (" + bootstrap +
                         ") is not the one scripts/kafka started in " + state_dir);
  }
  BrokerCost cost;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string node = entry.path().filename().string();
    if (!node.starts_with("node-") || !entry.is_directory()) continue;
    const std::string pid_text = ReadFile(entry.path() / "pid");
    const int pid = std::atoi(pid_text.c_str());
    // Like scripts/kafka's node_pid: the pid must still be this node's broker JVM.
    std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    const std::string props = (entry.path() / "server.properties").string();
    if (pid <= 0 || cmdline.find("kafka.Kafka " + props) == std::string::npos)
      return Status::Error(node + " of " + state_dir + " is not running");
    cost.nodes_.push_back({pid, (entry.path() / "data").string()});
  }
  if (cost.nodes_.empty()) return Status::Error("no broker nodes in " + state_dir);
  return cost;
}

BrokerCost::Snapshot BrokerCost::Take() const {
  Snapshot s;
  for (const Node& n : nodes_) {
    const double cpu = ProcessCpuSeconds(n.pid);
    if (cpu < 0) {
      s.complete = false;
    } else {
      s.cpu_s += cpu;
    }
    s.log_bytes += LogSegmentBytes(n.data_dir);
  }
  return s;
}

}  // namespace kbench
