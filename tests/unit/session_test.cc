// BenchSession: the explicit lifetime of each benchmark's Work, and interval statistics.

#include "fixtures/session.h"

#include <gtest/gtest.h>

namespace kbench::bench {
namespace {

struct CountedWork {
  explicit CountedWork(int* alive) : alive_(alive) { ++*alive_; }
  ~CountedWork() { --*alive_; }
  int* alive_;
};

TEST(BenchSession, WorkLivesFromFirstCallUntilItsBenchmarkIsReported) {
  BenchSession session;
  int alive = 0;
  auto& a = session.Enter<CountedWork>("A");
  a.work = std::make_unique<CountedWork>(&alive);
  // Later calls (trials, repetitions) find the same Work.
  EXPECT_EQ(session.Enter<CountedWork>("A").work.get(), a.work.get());
  EXPECT_EQ(alive, 1);
  session.EndLastBenchmark();  // the reporter, after A's last repetition
  EXPECT_EQ(alive, 0);
  EXPECT_EQ(session.Enter<CountedWork>("A").work, nullptr);  // a new run sets up again
  // Interleaved: B's report ends B only.
  session.Enter<CountedWork>("A").work = std::make_unique<CountedWork>(&alive);
  session.Enter<CountedWork>("B").work = std::make_unique<CountedWork>(&alive);
  EXPECT_EQ(session.last_benchmark(), "B");
  session.EndLastBenchmark();
  EXPECT_EQ(alive, 1);
  session.ReleaseAll();
  EXPECT_EQ(alive, 0);
}

TEST(IntervalSeries, CvOverFullIntervalsOnly) {
  IntervalSeries s;
  s.seconds = {1, 1, 1, 0.5};
  s.records_per_second = {90, 100, 110, 1};  // the short last interval is left out
  EXPECT_NEAR(s.RecordsPerSecondCv(), 0.1, 1e-12);
  s.seconds = {1};
  s.records_per_second = {100};
  EXPECT_EQ(s.RecordsPerSecondCv(), 0.0);
}

TEST(BenchSession, SeriesAreTakenOncePerBenchmark) {
  BenchSession session;
  IntervalSeries s;
  s.seconds = {1};
  s.records_per_second = {5};
  session.AddSeries("A", s);
  session.AddSeries("A", s);
  EXPECT_EQ(session.TakeSeries("A").size(), 2u);
  EXPECT_TRUE(session.TakeSeries("A").empty());
}

}  // namespace
}  // namespace kbench::bench
