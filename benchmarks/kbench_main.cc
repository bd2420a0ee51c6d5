// kbench: one executable for every benchmark family. Parses kbench's own options, lets
// Google Benchmark parse its flags, registers the families, records the run context and
// runs. Exit status: 0 all ran, 1 a benchmark failed its checks (the JSON is still
// written), 2 bad usage.

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "fixtures/cost_counters.h"
#include "fixtures/describe.h"
#include "fixtures/family.h"
#include "fixtures/options.h"
#include "fixtures/run_context.h"
#include "fixtures/runner.h"
#include "fixtures/session.h"
#include "fixtures/target.h"
#include "harness/status.h"

namespace {

using kbench::bench::BenchSession;
using kbench::bench::IntervalSeries;

// Forwards to Google Benchmark's own display reporter, remembers whether any benchmark
// failed (so the exit status tells scripts what the JSON says) and ends each benchmark's
// Work: Google Benchmark reports a benchmark right after its last repetition.
class KbenchDisplayReporter : public benchmark::BenchmarkReporter {
 public:
  KbenchDisplayReporter(benchmark::BenchmarkReporter* inner, BenchSession& session)
      : inner_(inner), session_(session) {}
  bool ReportContext(const Context& context) override { return inner_->ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override {
    session_.EndLastBenchmark();
    for (const auto& run : runs) {
      if (run.error_occurred) failures_.push_back(run.benchmark_name() + ": " + run.error_message);
    }
    inner_->ReportRuns(runs);
  }
  void Finalize() override { inner_->Finalize(); }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  BenchSession& session_;
  std::vector<std::string> failures_;
};

// Google Benchmark's JSON, plus the interval samples of every windowed run in a top-level
// "kbench_intervals" object (benchmark entries hold numbers only):
//   "kbench_intervals": {"<run_name>": [{"repetition_index": 0, "seconds": [...],
//       "records_per_second": [...], "mb_per_second": [...], "p99_us": [...],
//       Produce: "start_unix_seconds": S, "latency_count": N, "latency_sum_us": N,
//       "latency_min_us": N, "latency_max_us": N,
//       "latency_buckets": [[upper_bound_us, count], ...]}, ...]}
// and, when a maximum-rate search ran, its probes in the order they ran (the latency curve):
//   "kbench_rate_curves": {"<run_name>": [{"repetition_index": 0, "target_rate": [...],
//       "sent_rate": [...], "delivered_rate": [...], "p50_us": [...], "p99_us": [...],
//       "p999_us": [...], "sustained": [1, 0, ...]}, ...]}
class KbenchJsonReporter : public benchmark::JSONReporter {
 public:
  explicit KbenchJsonReporter(BenchSession& session) : session_(session) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    JSONReporter::ReportRuns(runs);
    if (runs.empty()) return;
    const std::string& name = session_.last_benchmark();
    KeepRepetitions(runs, session_.TakeSeries(name), intervals_);
    KeepRepetitions(runs, session_.TakeCurves(name), curves_);
  }
  // Google Benchmark's JSONReporter has written "benchmarks" and leaves the top-level
  // object open: kbench's keys follow, then the closing brace.
  void Finalize() override {
    nlohmann::ordered_json extra;
    nlohmann::ordered_json& intervals = extra["kbench_intervals"] =
        nlohmann::ordered_json::object();
    for (const auto& [name, reps] : intervals_) {
      auto& list = intervals[name] = nlohmann::ordered_json::array();
      for (const auto& [index, series] : reps) list.push_back(SeriesJson(index, series));
    }
    if (!curves_.empty()) {
      auto& curves = extra["kbench_rate_curves"];
      for (const auto& [name, reps] : curves_) {
        auto& list = curves[name] = nlohmann::ordered_json::array();
        for (const auto& [index, probes] : reps) list.push_back(CurveJson(index, probes));
      }
    }
    // What every metric and row kind means, so that a result explains itself.
    extra["kbench_describe"] = kbench::bench::Describe();
    std::string body = extra.dump(2);  // "{\n  ...\n}": its members go into the open object
    GetOutputStream() << "\n  ],\n" << body.substr(2, body.size() - 4) << "\n}\n";
  }

 private:
  // The last `repetitions` calls were the repetitions; earlier ones were trials.
  template <typename T>
  static void KeepRepetitions(const std::vector<Run>& runs, std::vector<T> calls,
                              std::map<std::string, std::vector<std::pair<std::size_t, T>>>& into) {
    if (calls.empty()) return;
    const auto reps = static_cast<std::size_t>(std::max<std::int64_t>(1, runs.front().repetitions));
    const std::size_t first = calls.size() > reps ? calls.size() - reps : 0;
    auto& out = into[runs.front().run_name.str()];
    for (std::size_t i = first; i < calls.size(); ++i) out.emplace_back(i - first, calls[i]);
  }
  // Non-finite values (no measurement) are written as null.
  static nlohmann::ordered_json Numbers(const std::vector<double>& values) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (double v : values) a.push_back(std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr);
    return a;
  }
  static nlohmann::ordered_json SeriesJson(std::size_t index, const IntervalSeries& series) {
    nlohmann::ordered_json o = {{"repetition_index", index},
                                {"seconds", Numbers(series.seconds)},
                                {"records_per_second", Numbers(series.records_per_second)},
                                {"mb_per_second", Numbers(series.mb_per_second)}};
    if (!series.p99_us.empty()) o["p99_us"] = Numbers(series.p99_us);
    if (series.start_unix_seconds > 0) o["start_unix_seconds"] = series.start_unix_seconds;
    if (series.latency_count > 0) {
      o["latency_count"] = series.latency_count;
      o["latency_sum_us"] = series.latency_sum_us;
      o["latency_min_us"] = series.latency_min_us;
      o["latency_max_us"] = series.latency_max_us;
      auto& buckets = o["latency_buckets"] = nlohmann::ordered_json::array();
      for (const auto& [bound, count] : series.latency_buckets) buckets.push_back({bound, count});
    }
    return o;
  }
  static nlohmann::ordered_json CurveJson(std::size_t index,
                                          const std::vector<kbench::bench::RateProbe>& probes) {
    nlohmann::ordered_json o = {{"repetition_index", index}};
    auto field = [&](const char* key, double (*get)(const kbench::bench::RateProbe&)) {
      std::vector<double> values;
      for (const auto& p : probes) values.push_back(get(p));
      o[key] = Numbers(values);
    };
    using kbench::bench::RateProbe;
    field("target_rate", [](const RateProbe& p) { return p.target_rate; });
    field("sent_rate", [](const RateProbe& p) { return p.sent_rate; });
    field("delivered_rate", [](const RateProbe& p) { return p.delivered_rate; });
    field("p50_us", [](const RateProbe& p) { return p.p50_us; });
    field("p99_us", [](const RateProbe& p) { return p.p99_us; });
    field("p999_us", [](const RateProbe& p) { return p.p999_us; });
    field("sustained", [](const RateProbe& p) { return p.sustained ? 1.0 : 0.0; });
    return o;
  }
  BenchSession& session_;
  std::map<std::string, std::vector<std::pair<std::size_t, IntervalSeries>>> intervals_;
  std::map<std::string, std::vector<std::pair<std::size_t, std::vector<kbench::bench::RateProbe>>>>
      curves_;
};

// Whether Google Benchmark will write a JSON file (--benchmark_out=F, format json, the
// default): then kbench's JSON reporter writes it. Read before benchmark::Initialize
// consumes the flags.
bool WritesJsonFile(int argc, char** argv) {
  bool out = false, json = true;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.starts_with("--benchmark_out=")) out = arg.size() > std::strlen("--benchmark_out=");
    if (arg.starts_with("--benchmark_out_format=")) json = arg == "--benchmark_out_format=json";
  }
  return out && json;
}

// The --benchmark_out=FILE path ("" if none), read before benchmark::Initialize.
std::string OutputFile(int argc, char** argv) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.starts_with("--benchmark_out=")) path = arg.substr(std::strlen("--benchmark_out="));
  }
  return path;
}

// The value of --describe=FORMAT, or null when absent.
const char* DescribeFormat(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--describe", 10) == 0 && (argv[i][10] == '=' || !argv[i][10])) {
      return argv[i][10] ? argv[i] + 11 : "";
    }
  }
  return nullptr;
}

bool WantsHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using kbench::bench::Options;
  if (WantsHelp(argc, argv)) {
    std::cout << "usage: kbench [kbench options] [--benchmark_* flags]\n\n"
              << kbench::bench::OptionsHelp() << kbench::bench::FamiliesKeysHelp()
              << "\nGoogle Benchmark flags:\n";
    benchmark::Initialize(&argc, argv);  // prints its own help and exits
    return 0;
  }
  if (const char* format = DescribeFormat(argc, argv)) {
    if (std::strcmp(format, "json") != 0) {
      std::cerr << "kbench: error: --describe takes one format: json (--describe=json)\n";
      return 2;
    }
    std::cout << kbench::bench::Describe().dump(2) << "\n";
    return 0;
  }
  Options options;
  try {
    options = kbench::bench::ParseOptions(&argc, argv, std::getenv("KBENCH_BOOTSTRAP"));
  } catch (const kbench::UsageError& e) {
    std::cerr << "kbench: error: " << e.what() << "\n(see kbench --help)\n";
    return 2;
  }
  const bool json_file = WritesJsonFile(argc, argv);
  // Google Benchmark would only say "invalid file name" (exit 1); refuse it as bad usage.
  if (std::string path = OutputFile(argc, argv); !path.empty()) {
    if (std::FILE* f = std::fopen(path.c_str(), "a")) {
      std::fclose(f);
    } else {
      std::cerr << "kbench: error: cannot write --benchmark_out '" << path
                << "': " << std::strerror(errno) << "\n";
      return 2;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  // Owns every benchmark's Work while it runs; outlives the registered benchmarks' runs.
  BenchSession session(options.fixed_iterations);
  try {
    kbench::bench::RegisterAllFamilies(options, session);
    std::string target =
        kbench::bench::ResolveTarget(options, session, benchmark::GetBenchmarkFilter());
    kbench::bench::AddRunContext(options, target);
    kbench::bench::SetUpCostMeasurement(options, target, session);
  } catch (const kbench::UsageError& e) {
    std::cerr << "kbench: error: " << e.what() << "\n";
    return 2;
  }

  KbenchDisplayReporter reporter(benchmark::CreateDefaultDisplayReporter(), session);
  KbenchJsonReporter json(session);
  kbench::bench::InstallInterruptHandlers();
  benchmark::RunSpecifiedBenchmarks(&reporter, json_file ? &json : nullptr);
  session.ReleaseAll();  // a benchmark that never reached its report (none expected)
  benchmark::Shutdown();
  if (int sig = kbench::bench::InterruptSignal()) {
    std::size_t cut = 0;
    for (const auto& f : reporter.failures()) cut += f.find(": interrupted by ") != f.npos;
    std::cerr << "kbench: " << kbench::bench::InterruptMessage("") << "- " << cut
              << " benchmark(s) cut short or not run; the JSON holds what finished\n";
    return 128 + sig;
  }
  if (!reporter.failures().empty()) {
    std::cerr << "kbench: " << reporter.failures().size() << " benchmark(s) failed:\n";
    for (const auto& f : reporter.failures()) std::cerr << "  " << f << "\n";
    return 1;
  }
  return 0;
}
