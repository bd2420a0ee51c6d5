// kbench: one executable for every benchmark family. Parses kbench's own options, lets
// Google Benchmark parse its flags, registers the families, records the run context and
// runs. Exit status: 0 all ran, 1 a benchmark failed its checks (the JSON is still
// written), 2 bad usage.

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "fixtures/family.h"
#include "fixtures/options.h"
#include "fixtures/run_context.h"
#include "fixtures/target.h"
#include "harness/status.h"

namespace {

// Forwards to Google Benchmark's own display reporter and remembers whether any benchmark
// failed, so the exit status tells scripts what the JSON says.
class FailureTrackingReporter : public benchmark::BenchmarkReporter {
 public:
  explicit FailureTrackingReporter(benchmark::BenchmarkReporter* inner) : inner_(inner) {}
  bool ReportContext(const Context& context) override { return inner_->ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.error_occurred) failures_.push_back(run.benchmark_name() + ": " + run.error_message);
    }
    inner_->ReportRuns(runs);
  }
  void Finalize() override { inner_->Finalize(); }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  std::vector<std::string> failures_;
};

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
              << kbench::bench::OptionsHelp() << "\nGoogle Benchmark flags:\n";
    benchmark::Initialize(&argc, argv);  // prints its own help and exits
    return 0;
  }
  Options options;
  try {
    options = kbench::bench::ParseOptions(&argc, argv, std::getenv("KBENCH_BOOTSTRAP"));
  } catch (const kbench::UsageError& e) {
    std::cerr << "kbench: error: " << e.what() << "\n(see kbench --help)\n";
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  kbench::bench::SetGlobalOptions(options);

  try {
    kbench::bench::RegisterAllFamilies(options);
    std::string target = kbench::bench::ResolveTarget(options, benchmark::GetBenchmarkFilter());
    kbench::bench::AddRunContext(options, target);
  } catch (const kbench::UsageError& e) {
    std::cerr << "kbench: error: " << e.what() << "\n";
    return 2;
  }

  FailureTrackingReporter reporter(benchmark::CreateDefaultDisplayReporter());
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (!reporter.failures().empty()) {
    std::cerr << "kbench: " << reporter.failures().size() << " benchmark(s) failed:\n";
    for (const auto& f : reporter.failures()) std::cerr << "  " << f << "\n";
    return 1;
  }
  return 0;
}
