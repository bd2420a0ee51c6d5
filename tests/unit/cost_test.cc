// Cost measurement (harness/cost.h, harness/broker_cost.h) and librdkafka's stage windows
// (harness/rdkafka_stats.h): the figures exist, are positive where work was done, and the
// per-thread clocks account for the process total. No timing is asserted beyond "more
// than zero CPU after burning CPU".

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "harness/broker_cost.h"
#include "harness/cost.h"
#include "harness/rdkafka_stats.h"
#include "tests/lib/sanitizer.h"

namespace kbench {
namespace {

// Spins for at least `cpu` of this thread's CPU time (not wall time: the machine is shared).
void Burn(std::chrono::milliseconds cpu) {
  timespec start{}, now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  volatile std::uint64_t x = 0;
  for (;;) {
    for (int i = 0; i < 100000; ++i) x = x + static_cast<std::uint64_t>(i);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    const double ms = static_cast<double>(now.tv_sec - start.tv_sec) * 1e3 +
                      static_cast<double>(now.tv_nsec - start.tv_nsec) / 1e6;
    if (ms >= static_cast<double>(cpu.count())) return;
  }
}

TEST(Cost, ThreadsAreClassifiedByName) {
  EXPECT_EQ(ClassifyThread("rdk:main"), ThreadClass::kLibrdkafka);
  EXPECT_EQ(ClassifyThread("rdk:broker1"), ThreadClass::kLibrdkafka);
  EXPECT_EQ(ClassifyThread("rdk:mock"), ThreadClass::kMock);
  EXPECT_EQ(ClassifyThread("kbench"), ThreadClass::kApp);
  EXPECT_EQ(ClassifyThread("cost_test"), ThreadClass::kApp);
}

// CPU burnt in this thread and in threads named like librdkafka's and its mock cluster's
// lands in the right class, and the classes sum to getrusage's total.
TEST(Cost, ThreadSplitSumsToProcessTotal) {
  std::atomic<bool> go{false};
  auto named = [&go](const char* name) {
    return std::thread([&go, name] {
      pthread_setname_np(pthread_self(), name);
      while (!go.load()) std::this_thread::yield();
      Burn(std::chrono::milliseconds(60));
    });
  };
  std::thread lib = named("rdk:broker7");
  std::thread mock = named("rdk:mock");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // names set
  const CostSnapshot before = CostSnapshot::Take();
  go = true;
  Burn(std::chrono::milliseconds(60));
  lib.join();
  mock.join();
  // The two threads exited: their CPU is in getrusage but no longer in a thread clock. So
  // measure a second round with live threads for the sum, and here only the classes.
  const CostSnapshot after = CostSnapshot::Take();
  const CpuDelta d = Difference(before, after);
  EXPECT_GE(d.app_s, 0.055);
  EXPECT_GE(d.process_s(), 0.17);
  EXPECT_GT(d.user_s, 0);

  std::atomic<bool> stop{false}, go2{false}, named2{false}, burned{false};
  std::thread live([&] {
    pthread_setname_np(pthread_self(), "rdk:main");
    named2 = true;
    while (!go2.load()) std::this_thread::yield();
    Burn(std::chrono::milliseconds(80));
    burned = true;
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!named2.load()) std::this_thread::yield();
  const CostSnapshot b2 = CostSnapshot::Take();
  go2 = true;
  Burn(std::chrono::milliseconds(80));
  // Wait for the thread's burn itself, not a fixed sleep: on a loaded machine 80 ms of CPU
  // can take far longer than 200 ms of wall time.
  while (!burned.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const CostSnapshot a2 = CostSnapshot::Take();
  stop = true;
  live.join();
  const CpuDelta d2 = Difference(b2, a2);
  EXPECT_GE(d2.librdkafka_s, 0.075);
  EXPECT_GE(d2.app_s, 0.075);
  EXPECT_NEAR(d2.mock_s, 0, 0.005);
  // The per-thread clocks and getrusage agree (5 % is the project's goal; the test allows
  // the same).
  EXPECT_LT(d2.accounting_gap(), 0.05)
      << "threads " << d2.threads_s() << " s, process " << d2.process_s() << " s";
}

TEST(Cost, MemoryFiguresArePositiveAndFollowAllocations) {
  EXPECT_TRUE(ResetPeakRss());
  const CostSnapshot before = CostSnapshot::Take();
  EXPECT_GT(before.rss_bytes, 0);
  EXPECT_GT(before.peak_rss_bytes, 0);
  EXPECT_GE(before.peak_rss_bytes, before.rss_bytes - 4096);
  std::vector<char> block(64 << 20, 1);  // touched: resident
  const CostSnapshot after = CostSnapshot::Take();
#if !KBENCH_TEST_ASAN  // ASan's allocator replaces glibc's: mallinfo2 does not see its heap
  EXPECT_GE(after.heap_bytes - before.heap_bytes, 60 << 20);
#endif
  EXPECT_GE(after.peak_rss_bytes - before.peak_rss_bytes, 60 << 20);
  EXPECT_EQ(block[12345], 1);
}

TEST(BrokerCost, ProcessCpuAndLogBytes) {
  Burn(std::chrono::milliseconds(50));
  EXPECT_GE(ProcessCpuSeconds(getpid()), 0.04);
  EXPECT_LT(ProcessCpuSeconds(-5), 0);

  const auto dir =
      std::filesystem::temp_directory_path() / ("kbench-cost-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "topic-0");
  std::ofstream(dir / "topic-0" / "00000000000000000000.log") << std::string(1000, 'x');
  std::ofstream(dir / "topic-0" / "00000000000000000000.index") << std::string(500, 'x');
  std::ofstream(dir / "topic-0" / "00000000000000000123.log") << std::string(24, 'x');
  EXPECT_EQ(LogSegmentBytes(dir.string()), 1024);
  // A deleted topic's partition (renamed, removed a minute later) is not counted.
  std::filesystem::create_directories(dir / "old-0.7f3a-delete");
  std::ofstream(dir / "old-0.7f3a-delete" / "00000000000000000000.log") << std::string(4096, 'x');
  EXPECT_EQ(LogSegmentBytes(dir.string()), 1024);
  EXPECT_EQ(LogSegmentBytes((dir / "missing").string()), 0);

  // Not a scripts/kafka state directory: refused with a reason, nothing measured.
  StatusOr<BrokerCost> s = BrokerCost::Open(dir.string(), "127.0.0.1:1");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a scripts/kafka state directory"), std::string::npos);
  // A state directory whose cluster is another address: refused too.
  std::ofstream(dir / ".kbench-kafka") << "marker";
  std::ofstream(dir / "bootstrap") << "127.0.0.1:19092\n";
  s = BrokerCost::Open(dir.string(), "127.0.0.1:29092");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is not the one"), std::string::npos) << s.message();
  // The right address, but node-0's pid is not a broker JVM (this test is not one).
  std::filesystem::create_directories(dir / "node-0");
  std::ofstream(dir / "node-0" / "pid") << getpid();
  s = BrokerCost::Open(dir.string(), "127.0.0.1:19092");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not running"), std::string::npos) << s.message();
  std::filesystem::remove_all(dir);
}

StageWindow Window(Stage stage, std::int64_t cnt, std::array<double, 8> x) {
  StageWindow w;
  w.stage = stage;
  w.cnt = cnt;
  w.x = x;
  return w;
}

TEST(StageWindows, PercentilesOfTheMixture) {
  std::vector<StageWindow> ws;
  EXPECT_TRUE(std::isnan(StagePercentile(ws, Stage::kRtt, 0.5)));
  // One window: its own percentile points come back.
  ws.push_back(Window(Stage::kRtt, 100, {10, 50, 75, 90, 95, 99, 100, 100}));
  EXPECT_NEAR(StagePercentile(ws, Stage::kRtt, 0.50), 50, 0.01);
  EXPECT_NEAR(StagePercentile(ws, Stage::kRtt, 0.99), 99, 0.01);
  // A second window of the same count, all of it above the first: the mixture's median is
  // the boundary between them, its p99 in the second window's upper tail.
  ws.push_back(Window(Stage::kRtt, 100, {1000, 1500, 1750, 1900, 1950, 1990, 2000, 2000}));
  EXPECT_NEAR(StagePercentile(ws, Stage::kRtt, 0.50), 100, 1);
  EXPECT_NEAR(StagePercentile(ws, Stage::kRtt, 0.99), 1980, 1);  // its q = 0.98
  // Weighted by count: a window of 10 records barely moves a median of 200.
  ws.push_back(Window(Stage::kIntLatency, 10, {1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_NEAR(StagePercentile(ws, Stage::kRtt, 0.50), 100, 1);
  EXPECT_NEAR(StagePercentile(ws, Stage::kIntLatency, 0.50), 1, 0.01);
}

TEST(StageWindows, ParsedFromStatisticsPerBroker) {
  const char* json = R"({"txmsgs": 5, "brokers": {
    "b1": {"txbytes": 10, "req": {"Produce": 2},
           "rtt": {"min": 100, "max": 900, "p50": 300, "p75": 400, "p90": 500, "p95": 600,
                   "p99": 800, "p99_99": 950, "cnt": 4},
           "int_latency": {"min": 0, "max": 0, "cnt": 0},
           "throttle": {"min": 0, "max": 0, "p50": 0, "p99": 0, "cnt": 2}},
    "b2": {"outbuf_latency": {"min": 5, "max": 7, "p50": 6, "p75": 6, "p90": 6, "p95": 7,
                              "p99": 7, "p99_99": 7, "cnt": 3}}}})";
  StatusOr<RdkafkaStats> parsed = ParseRdkafkaStats(json);
  ASSERT_TRUE(parsed.ok());
  const RdkafkaStats& s = *parsed;
  ASSERT_EQ(s.stages.size(), 3u);  // int_latency had no records
  EXPECT_NEAR(StagePercentile(s.stages, Stage::kRtt, 0.5), 300, 0.01);
  // max below p99_99 (bucket rounding) is raised, so the quantile function stays monotone.
  EXPECT_LE(StagePercentile(s.stages, Stage::kRtt, 0.9999), 950.01);
  EXPECT_NEAR(StagePercentile(s.stages, Stage::kOutbufLatency, 0.5), 6, 0.01);
  EXPECT_NEAR(StagePercentile(s.stages, Stage::kThrottle, 0.99), 0, 0.01);

  // Accumulated over emits, and handed out between two snapshots only.
  StatsAccumulator acc;
  acc.Add(s);
  const auto first = acc.Get();
  acc.Add(s);
  acc.Add(s);
  const auto last = acc.Get();
  EXPECT_EQ(acc.StagesBetween(first, last).size(), 6u);
  EXPECT_EQ(acc.emits(), 3);
}

}  // namespace
}  // namespace kbench
