#include "harness/context.h"

#include <link.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <memory>

#include <librdkafka/rdkafka.h>

#include "harness/build_info.h"
#include "harness/codec.h"

namespace kbench {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("model name")) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
      }
    }
  }
  return "unknown";
}

std::string Kernel() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release;
}

// "soname=path,..." of the shared libraries (SharedLibraries()) this process loaded, resolved:
// LD_LIBRARY_PATH (scripts/symbols, scripts/librdkafka) can swap any of them, and only the
// file that ran says which build a result or profile came from.
std::string LoadedLibraries() {
  std::vector<std::string> found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        std::string_view path = info->dlpi_name ? info->dlpi_name : "";
        const size_t slash = path.rfind('/');
        std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
        for (const SharedLibrary& lib : SharedLibraries()) {
          // "libz.so.1" -> "libz.so": any version of the library.
          const std::string_view prefix = lib.soname.substr(0, lib.soname.find(".so") + 3);
          if (!base.starts_with(prefix)) continue;
          std::unique_ptr<char, decltype(&std::free)> real(
              realpath(std::string(path).c_str(), nullptr), &std::free);
          static_cast<std::vector<std::string>*>(data)->push_back(
              std::string(base) + "=" + (real ? real.get() : std::string(path)));
        }
        return 0;
      },
      &found);
  std::sort(found.begin(), found.end());
  std::string out;
  for (const auto& f : found) out += (out.empty() ? "" : ",") + f;
  return out;
}

constexpr std::string_view kBenchmark = "Google Benchmark", kKbench = "kbench",
                           kScripts = "scripts", kEveryRun = "";

}  // namespace

const std::vector<SharedLibrary>& SharedLibraries() {
  static const std::vector<SharedLibrary> libraries = [] {
    std::vector<SharedLibrary> out = {
        {"librdkafka", "librdkafka.so.1", "rd_kafka_version_str", "librdkafka_version", {}}};
    for (const CodecInfo& c : CodecTable()) {
      if (c.library.empty()) continue;
      auto same = std::find_if(out.begin(), out.end(),
                               [&](const SharedLibrary& l) { return l.name == c.library; });
      if (same == out.end()) {
        out.push_back({c.library, c.soname, c.version_function, {}, {}});
        same = out.end() - 1;
      }
      if (!c.version_key.empty()) same->version_key = c.version_key;
      same->codecs.push_back(c.name);
    }
    return out;
  }();
  return libraries;
}

const ComparisonInfo& Comparison(ContextComparison c) {
  // In the enum's order.
  static constexpr ComparisonInfo kInfo[] = {
      {"critical",
       "runs that differ are different experiments (another machine, build or target): "
       "scripts/compare refuses them (exit 2) unless --force"},
      {"version", "what one compares: printed as 'comparing X vs Y'"},
      {"ignored", "differs on every run: not compared"},
      {"other", "a difference is printed as a note"},
  };
  return kInfo[static_cast<std::size_t>(c)];
}

const std::vector<ContextKey>& ContextKeys() {
  using C = ContextComparison;
  static const std::vector<ContextKey> keys = [] {
    std::vector<ContextKey> out = {
        {"date", kBenchmark, C::kIgnored, false, "when the run started", kEveryRun},
        {"host_name", kBenchmark, C::kCritical, true, "the machine", kEveryRun},
        {"executable", kBenchmark, C::kIgnored, false, "the kbench binary that ran", kEveryRun},
        {"num_cpus", kBenchmark, C::kCritical, true, "CPUs of the machine", kEveryRun},
        {"mhz_per_cpu", kBenchmark, C::kOther, false, "the CPUs' clock", kEveryRun},
        {"cpu_scaling_enabled", kBenchmark, C::kOther, false, "whether the CPU governor scales",
         kEveryRun},
        {"caches", kBenchmark, C::kOther, false, "the CPU caches", kEveryRun},
        {"load_avg", kBenchmark, C::kIgnored, false, "the machine's load when the run started",
         kEveryRun},
        {"library_build_type", kBenchmark, C::kOther, false,
         "how libbenchmark was built: Debian's always says debug (built without NDEBUG, "
         "which does not affect kbench's code); read build_type",
         kEveryRun},
        {"kbench_version", kKbench, C::kVersion, false, "kbench's own version", kEveryRun},
        {"git_sha", kKbench, C::kVersion, false, "the commit built", kEveryRun},
        {"git_dirty", kKbench, C::kVersion, false, "whether the tree had local changes", kEveryRun},
        {"build_type", kKbench, C::kCritical, true,
         "how kbench was built (compare Release with Release only)", kEveryRun},
        {"compiler", kKbench, C::kVersion, false, "the compiler that built kbench", kEveryRun},
        {"cxx_flags", kKbench, C::kVersion, false, "its flags", kEveryRun},
        {"librdkafka_version", kKbench, C::kVersion, true,
         "the librdkafka loaded at run time (rd_kafka_version_str())", kEveryRun},
    };
    for (const SharedLibrary& lib : SharedLibraries()) {
      if (lib.name == "librdkafka" || lib.version_key.empty()) continue;
      out.push_back({std::string(lib.version_key), kKbench, C::kVersion, false,
                     std::string(lib.name) + ", the library of codec " +
                         std::string(lib.codecs.front()) + ": " +
                         (lib.version_function.empty()
                              ? std::string("its headers' version (it has no run-time query)")
                              : "the loaded library's " + std::string(lib.version_function) + "()"),
                     kEveryRun});
    }
    std::vector<ContextKey> rest = {
        {"librdkafka_source", kKbench, C::kOther, false,
         "what the loaded librdkafka was built from (KBENCH_LIBRDKAFKA_SOURCE, set by "
         "scripts/bench-commits): two commits of one release report one version",
         "KBENCH_LIBRDKAFKA_SOURCE is set"},
        {"loaded_libraries", kKbench, C::kOther, false,
         "soname=file of librdkafka and each codec library that ran, resolved: symbol builds "
         "and other releases come in through LD_LIBRARY_PATH",
         kEveryRun},
        {"cpu_model", kKbench, C::kCritical, true, "the machine's CPU", kEveryRun},
        {"kernel", kKbench, C::kVersion, false, "the operating system's kernel", kEveryRun},
        {"payload_seed", kKbench, C::kOther, false,
         "seed of the payload generators; equal seeds give identical payloads", kEveryRun},
        {"working_set_bytes", kKbench, C::kOther, false,
         "Codec, Batch, Format: value bytes of distinct batches each iteration walks", kEveryRun},
        {"payload_repeats", kKbench, C::kOther, false,
         "refused, or allowed with --allow-repeats (a small file: payload cycled)", kEveryRun},
        {"target", kKbench, C::kCritical, true,
         "none (no cluster needed), mock (librdkafka's mock cluster) or live (a real broker)",
         kEveryRun},
        {"bootstrap", kKbench, C::kOther, false, "the live cluster's bootstrap servers", kEveryRun},
        {"security_protocol", kKbench, C::kOther, false,
         "plaintext, ssl, sasl_plaintext or sasl_ssl, from the client settings", kEveryRun},
        {"sasl_mechanism", kKbench, C::kOther, false, "none unless the protocol is SASL",
         kEveryRun},
        {"tls_client_certificate", kKbench, C::kOther, false,
         "true when a client certificate is set", kEveryRun},
        {"client.", kKbench, C::kOther, false,
         "every client setting as client.<key>, with passwords, secrets, tokens, SASL "
         "credentials and key material replaced by ***",
         "a client setting is given (-X, --client-config)"},
        {"client_cost", kKbench, C::kOther, false, "on, or off with --costs=off", kEveryRun},
        {"broker_cost", kKbench, C::kOther, false,
         "measured: ..., mock: ..., or unavailable: WHY (e.g. someone else's cluster)", kEveryRun},
        {"broker_version", kKbench, C::kVersion, true,
         "the broker's release (KBENCH_BROKER_VERSION, which scripts/bench sets from "
         "scripts/kafka; Kafka's protocol carries no version string), or the mock's",
         "the target is a cluster (live or mock)"},
        {"broker_api_versions", kKbench, C::kOther, false, "the API versions the broker offers",
         "the target is live"},
        {"broker_count", kKbench, C::kOther, false, "brokers in the live cluster",
         "the target is live"},
        {"mock_cluster", kKbench, C::kOther, false,
         "embedded (the loaded librdkafka's mock) or process (kbench-mock, --mock=process)",
         "the target is mock"},
        {"end_to_end_clock", kKbench, C::kOther, false,
         "the clock EndToEnd's latency is read on (one steady clock on one host)", kEveryRun},
        {"kbench_merged_runs", kScripts, C::kIgnored, false,
         "processes merged into one file (scripts/bench, scripts/bench-commits)",
         "the scripts merged processes' files"},
        {"kbench_merged_from", kScripts, C::kIgnored, false, "the files merged",
         "the scripts merged files"},
        {"kbench_pairing", kScripts, C::kOther, false,
         "one label on both sides of paired runs: scripts/compare pairs them process by process",
         "runs were paired (scripts/bench-commits)"},
        {"kbench_instructions_of", kScripts, C::kCritical, false,
         "instructions counted inside these functions only, not the whole process",
         "--instructions-of"},
        {"kbench_measure", kScripts, C::kOther, false,
         "callgrind_instructions_per_iteration for --instructions results", "--instructions"},
        {"kbench_concurrent_processes", kScripts, C::kOther, false,
         "kbench processes that ran at once (scenarios)", "a scenario ran processes at once"},
    };
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  }();
  return keys;
}

const SecretSettingRule& SecretSettings() {
  // Substrings that mark credentials in librdkafka's and Kafka's setting names
  // (sasl.password, ssl.key.password, sasl.oauthbearer.client.secret, ssl.key.pem,
  // ssl_key, ssl.keystore.password, sasl.jaas.config ...). Inline key material: ssl.key.*
  // (ssl.certificate.pem is public); librdkafka also marks ssl.ca.pem sensitive
  // (_RK_SENSITIVE), so kbench follows it.
  static constexpr std::string_view kMarkers[] = {"password",  "secret",        "token",
                                                  "sasl.jaas", "sasl.username", "ssl.key.pem",
                                                  "ssl_key",   "private",       "credential"};
  static constexpr std::string_view kPrefixes[] = {"ssl.key", "sasl.oauthbearer.config"};
  static constexpr std::string_view kNames[] = {"ssl.ca.pem"};
  static const SecretSettingRule rule{kMarkers, kPrefixes, kNames};
  return rule;
}

bool IsSecretSetting(std::string_view key) {
  const std::string k = Lower(key);
  const SecretSettingRule& rule = SecretSettings();
  for (auto m : rule.markers) {
    if (k.find(m) != std::string::npos) return true;
  }
  for (auto p : rule.prefixes) {
    if (k.starts_with(p)) return true;
  }
  for (auto n : rule.names) {
    if (k == n) return true;
  }
  return false;
}

std::string RedactedValue(std::string_view key, std::string_view value) {
  return IsSecretSetting(key) ? std::string("***") : std::string(value);
}

ContextEntries SecurityContext(const ContextEntries& client_settings) {
  std::string protocol = "plaintext", mechanism = "GSSAPI";
  bool client_certificate = false;
  for (const auto& [key, value] : client_settings) {
    const std::string k = Lower(key);
    if (k == "security.protocol") protocol = Lower(value);
    // sasl.mechanism is librdkafka's alias of sasl.mechanisms.
    if (k == "sasl.mechanisms" || k == "sasl.mechanism") mechanism = value;
    if (k == "ssl.certificate.location" || k == "ssl.certificate.pem" ||
        k == "ssl.keystore.location") {
      client_certificate = !value.empty();
    }
  }
  if (!protocol.starts_with("sasl_")) mechanism = "none";
  return {{"security_protocol", protocol},
          {"sasl_mechanism", mechanism},
          {"tls_client_certificate", client_certificate ? "true" : "false"}};
}

ContextEntries CollectBuildAndMachineContext(std::string_view librdkafka_source) {
  ContextEntries entries = {
      {"kbench_version", build_info::kVersion},
      {"git_sha", build_info::kGitSha},
      {"git_dirty", build_info::kGitDirty ? "true" : "false"},
      {"build_type", build_info::kBuildType},
      {"compiler", build_info::kCompiler},
      {"cxx_flags", build_info::kCxxFlags},
      // The runtime library, not the header macro: LD_LIBRARY_PATH may swap it.
      {"librdkafka_version", rd_kafka_version_str()},
      {"loaded_libraries", LoadedLibraries()},
      {"cpu_model", CpuModel()},
      {"kernel", Kernel()},
  };
  // One key per codec library (its row's version_key: zlib_version, zstd_version, ...).
  for (auto& [key, version] : CodecLibraryVersions()) entries.emplace_back(key, version);
  // Two commits of one librdkafka release report the same version string: the script that
  // built the library says which source it came from (scripts/bench-commits).
  if (!librdkafka_source.empty()) entries.emplace_back("librdkafka_source", librdkafka_source);
  return entries;
}

}  // namespace kbench
