#include "harness/cost.h"

#include <dirent.h>
#include <malloc.h>
#include <sys/resource.h>
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

namespace kbench {
namespace {

std::int64_t TimevalNs(const timeval& tv) {
  return static_cast<std::int64_t>(tv.tv_sec) * 1000000000 +
         static_cast<std::int64_t>(tv.tv_usec) * 1000;
}

// The CPU clock of any thread of this process, by its kernel tid: the clock id the kernel
// derives from a tid (what glibc's pthread_getcpuclockid builds from a pthread_t, which
// librdkafka's threads do not hand out): ~tid << 3 | per-thread | sched.
clockid_t ThreadClock(int tid) {
  constexpr clockid_t kPerThread = 4, kSched = 2;
  return static_cast<clockid_t>((~static_cast<unsigned>(tid)) << 3) | kPerThread | kSched;
}

std::string ReadSmall(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return "";
  char buf[256];
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  std::string s(buf, n);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// "VmRSS:     1234 kB" -> bytes.
void ReadStatusMemory(std::int64_t* rss, std::int64_t* hwm) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    std::int64_t* into = line.starts_with("VmRSS:")   ? rss
                         : line.starts_with("VmHWM:") ? hwm
                                                      : nullptr;
    if (into) *into = std::strtoll(line.c_str() + 6, nullptr, 10) * 1024;
  }
}

}  // namespace

ThreadClass ClassifyThread(std::string_view comm) {
  if (comm.starts_with("rdk:mock")) return ThreadClass::kMock;
  if (comm.starts_with("rdk:")) return ThreadClass::kLibrdkafka;
  return ThreadClass::kApp;
}

CostSnapshot CostSnapshot::Take() {
  CostSnapshot s;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      Thread t;
      t.tid = std::atoi(e->d_name);
      timespec ts{};
      if (clock_gettime(ThreadClock(t.tid), &ts) != 0) continue;  // exited meanwhile
      t.cpu_ns = static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
      t.cls = ClassifyThread(ReadSmall(std::string("/proc/self/task/") + e->d_name + "/comm"));
      s.threads.push_back(t);
    }
    closedir(dir);
  }
  // After the threads, so the process total is never behind their sum.
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  s.user_ns = TimevalNs(ru.ru_utime);
  s.system_ns = TimevalNs(ru.ru_stime);
  s.voluntary_switches = ru.ru_nvcsw;
  s.involuntary_switches = ru.ru_nivcsw;
  ReadStatusMemory(&s.rss_bytes, &s.peak_rss_bytes);
  struct mallinfo2 mi = mallinfo2();
  s.heap_bytes = static_cast<std::int64_t>(mi.uordblks + mi.hblkhd);
  return s;
}

double CpuDelta::accounting_gap() const {
  const double p = process_s();
  return p > 0 ? std::fabs(threads_s() - p) / p : 0.0;
}

CpuDelta Difference(const CostSnapshot& before, const CostSnapshot& after) {
  CpuDelta d;
  d.user_s = static_cast<double>(after.user_ns - before.user_ns) * 1e-9;
  d.system_s = static_cast<double>(after.system_ns - before.system_ns) * 1e-9;
  d.voluntary_switches = after.voluntary_switches - before.voluntary_switches;
  d.involuntary_switches = after.involuntary_switches - before.involuntary_switches;
  std::map<int, std::int64_t> start;
  for (const auto& t : before.threads) start[t.tid] = t.cpu_ns;
  for (const auto& t : after.threads) {
    // A thread born in between counts from 0. (A recycled tid would count from its
    // predecessor's clock; tids are not reused that quickly.)
    auto it = start.find(t.tid);
    const double s = static_cast<double>(t.cpu_ns - (it == start.end() ? 0 : it->second)) * 1e-9;
    switch (t.cls) {
      case ThreadClass::kApp:
        d.app_s += s;
        break;
      case ThreadClass::kLibrdkafka:
        d.librdkafka_s += s;
        break;
      case ThreadClass::kMock:
        d.mock_s += s;
        break;
    }
  }
  return d;
}

bool ResetPeakRss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "we");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

}  // namespace kbench
