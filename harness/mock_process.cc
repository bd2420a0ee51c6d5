#include "harness/mock_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

extern char** environ;

namespace kbench {
namespace {

std::string Beside(const std::string& name) {
  std::vector<char> self(4096);
  ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) return name;
  std::string path(self.data(), static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + name;
}

bool ReadLine(std::FILE* f, std::string& line) {
  line.clear();
  for (int c; (c = std::fgetc(f)) != EOF;) {
    if (c == '\n') return true;
    line.push_back(static_cast<char>(c));
  }
  return !line.empty();
}

}  // namespace

StatusOr<std::unique_ptr<MockProcess>> MockProcess::Start(int brokers, std::string program) {
  if (program.empty()) program = Beside("kbench-mock");
  if (access(program.c_str(), X_OK) != 0) {
    return Status::Error("the mock host " + program +
                         " is missing (build it: cmake --build build)");
  }
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Status::Error(std::string("pipe: ") + strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return Status::Error(std::string("pipe: ") + strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  // The release under test is on kbench's LD_LIBRARY_PATH (or LD_PRELOAD); the cluster must
  // not run it.
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0 && std::strncmp(*e, "LD_PRELOAD=", 11) != 0)
      env.push_back(*e);
  }
  env.push_back(nullptr);
  std::string count = std::to_string(brokers);
  std::vector<char*> argv = {program.data(), const_cast<char*>("--brokers"), count.data(), nullptr};
  std::unique_ptr<MockProcess> p(new MockProcess());
  int rc = posix_spawn(&p->pid_, program.c_str(), &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    p->pid_ = -1;
    return Status::Error("cannot start " + program + ": " + strerror(rc));
  }
  p->to_ = fdopen(in[1], "w");
  p->from_ = fdopen(out[0], "r");
  p->brokers_ = brokers;
  std::string line;
  // "bootstrap HOST:PORT,...<TAB>librdkafka VERSION"
  if (!ReadLine(p->from_, line) || line.rfind("bootstrap ", 0) != 0) {
    return Status::Error(program + " did not start a mock cluster (it said '" + line + "')");
  }
  std::size_t tab = line.find('\t');
  p->bootstrap_ = line.substr(10, tab == std::string::npos ? std::string::npos : tab - 10);
  if (tab != std::string::npos && line.compare(tab + 1, 11, "librdkafka ") == 0) {
    p->version_ = line.substr(tab + 12);
  }
  return p;
}

StatusOr<std::string> MockProcess::Ask(const std::string& line) {
  std::string answer;
  if (std::fprintf(to_, "%s\n", line.c_str()) < 0 || std::fflush(to_) != 0 ||
      !ReadLine(from_, answer)) {
    return Status::Error("the mock cluster's process stopped answering");
  }
  return answer;
}

Status MockProcess::CreateTopic(const std::string& name, int partitions, int replication) {
  StatusOr<std::string> answer =
      Ask("topic " + name + " " + std::to_string(partitions) + " " + std::to_string(replication));
  if (!answer) return answer.status();
  if (*answer != "ok") return Status::Error("mock topic create failed: " + answer->substr(6));
  return Status::Ok();
}

MockProcess::~MockProcess() {
  if (to_) std::fclose(to_);  // end of its input: it destroys the cluster and exits
  if (from_) std::fclose(from_);
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

}  // namespace kbench
