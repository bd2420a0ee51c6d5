#include "harness/context.h"

#include <link.h>
#include <sys/utsname.h>

#include <algorithm>
#include <array>
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

// "soname=path,..." of the codec and librdkafka shared objects this process loaded, resolved:
// LD_LIBRARY_PATH (scripts/symbols, scripts/librdkafka) can swap any of them, and only the
// file that ran says which build a result or profile came from.
constexpr std::array<std::string_view, 5> kLibraryPrefixes = {
    "librdkafka.so", "libzstd.so", "liblz4.so", "libsnappy.so", "libz.so"};

std::string LoadedLibraries() {
  std::vector<std::string> found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        std::string_view path = info->dlpi_name ? info->dlpi_name : "";
        const size_t slash = path.rfind('/');
        std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
        for (auto prefix : kLibraryPrefixes) {
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

}  // namespace

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
