#pragma once

// The mock cluster in a process of its own (mock/mock_host.cc, `kbench-mock` beside the
// kbench binary): started without LD_LIBRARY_PATH and LD_PRELOAD, so it runs the system's
// librdkafka whatever release kbench itself loaded, and stopped (end of its input) when this object
// goes. Topics are created through it; clients reach it by its bootstrap address.

#include <sys/types.h>

#include <cstdio>
#include <memory>
#include <string>

#include "harness/status.h"

namespace kbench {

class MockProcess {
 public:
  // Starts `program` (default: kbench-mock beside this executable) with `brokers` brokers.
  static StatusOr<std::unique_ptr<MockProcess>> Start(int brokers, std::string program = "");
  ~MockProcess();
  MockProcess(const MockProcess&) = delete;
  MockProcess& operator=(const MockProcess&) = delete;

  const std::string& bootstrap() const { return bootstrap_; }
  // The hosting process's librdkafka, e.g. "2.0.2".
  const std::string& librdkafka_version() const { return version_; }
  int brokers() const { return brokers_; }
  Status CreateTopic(const std::string& name, int partitions, int replication);

 private:
  MockProcess() = default;
  StatusOr<std::string> Ask(const std::string& line);

  pid_t pid_ = -1;
  std::FILE* to_ = nullptr;    // its stdin
  std::FILE* from_ = nullptr;  // its stdout
  int brokers_ = 0;
  std::string bootstrap_, version_;
};

}  // namespace kbench
