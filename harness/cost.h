#pragma once

// What running costs this process: CPU (user and system, from getrusage), the same CPU per
// thread class (from each thread's CPU clock, so the split can be checked against the
// total), context switches, resident memory and heap bytes in use. A snapshot is a few
// dozen system calls (one clock read per thread), taken only at the edges of a measured
// window, never inside it.
//
// Thread classes, by the name the thread gave itself (/proc/self/task/TID/comm):
//   librdkafka  "rdk:main", "rdk:broker...", "rdk:bg" ...: the client library's own threads
//   mock        "rdk:mock...": librdkafka's in-process mock cluster (the broker, not the
//               client, so it is kept apart from the client's CPU)
//   app         everything else: the benchmark's thread and kbench's driver threads
// A thread that exits between two snapshots leaves the per-thread sum (getrusage still
// counts it): the gap between the two is reported, so such a loss shows.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kbench {

enum class ThreadClass { kApp, kLibrdkafka, kMock };
ThreadClass ClassifyThread(std::string_view comm);

struct CostSnapshot {
  std::int64_t user_ns = 0;    // process, getrusage(RUSAGE_SELF)
  std::int64_t system_ns = 0;  // process, getrusage(RUSAGE_SELF)
  std::int64_t voluntary_switches = 0;
  std::int64_t involuntary_switches = 0;
  struct Thread {
    int tid = 0;
    ThreadClass cls = ThreadClass::kApp;
    std::int64_t cpu_ns = 0;  // the thread's CPU clock (user + system)
  };
  std::vector<Thread> threads;
  std::int64_t rss_bytes = 0;       // VmRSS
  std::int64_t peak_rss_bytes = 0;  // VmHWM (since the last ResetPeakRss)
  std::int64_t heap_bytes = 0;      // malloc'd bytes in use (mallinfo2)

  static CostSnapshot Take();
};

// CPU between two snapshots, by thread class.
struct CpuDelta {
  double user_s = 0, system_s = 0;                 // process total (getrusage)
  double app_s = 0, librdkafka_s = 0, mock_s = 0;  // sums of thread clocks
  double process_s() const { return user_s + system_s; }
  double threads_s() const { return app_s + librdkafka_s + mock_s; }
  // The client's CPU: the process without the in-process mock cluster's threads.
  double client_s() const { return process_s() - mock_s; }
  // |threads - process| / process: how well the per-thread clocks account for the total.
  double accounting_gap() const;
  std::int64_t voluntary_switches = 0, involuntary_switches = 0;
};
CpuDelta Difference(const CostSnapshot& before, const CostSnapshot& after);

// Resets the process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0: "5" into
// /proc/self/clear_refs), so a window's peak is its own. False when the kernel refused.
bool ResetPeakRss();

}  // namespace kbench
