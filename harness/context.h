#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kbench {

using ContextEntries = std::vector<std::pair<std::string, std::string>>;

// Which setting names hold credentials (their values never reach results, logs or the
// console): a lower-cased name containing a marker, starting with a prefix, or equal to a
// name. `kbench --describe=json` prints it; scripts redact with the same rule from there.
struct SecretSettingRule {
  std::span<const std::string_view> markers;
  std::span<const std::string_view> prefixes;
  std::span<const std::string_view> names;
};
const SecretSettingRule& SecretSettings();
// True when a client setting's value must never reach results or logs: passwords,
// secrets, SASL credentials, key material, tokens.
bool IsSecretSetting(std::string_view key);

// "***" for secret settings, the value otherwise.
std::string RedactedValue(std::string_view key, std::string_view value);

// The machine/build/library part of the run context (ContextKeys() below; docs/counters.md,
// "Run context", is generated from it): kbench and
// git versions, build type, compiler and flags, runtime library versions, CPU and kernel.
// `librdkafka_source` is the value of KBENCH_LIBRDKAFKA_SOURCE when set (what the loaded
// library was built from, e.g. "tree:/src/librdkafka@<sha>"), absent otherwise.
// Target-specific keys (target, bootstrap, broker_version, client settings) are added by
// the code that knows them.
ContextEntries CollectBuildAndMachineContext(std::string_view librdkafka_source = {});

// A shared library whose build decides a result: librdkafka, then each codec's library, once
// (from CodecTable()). `loaded_libraries` in the run context names the files of these that
// ran; scripts ask a library its version by `version_function` (empty: it has none).
struct SharedLibrary {
  std::string_view name;
  std::string_view soname;
  std::string_view version_function;
  std::string_view version_key;  // its run-context key
  std::vector<std::string_view> codecs;
};
const std::vector<SharedLibrary>& SharedLibraries();

// What a differing value of a run-context key means when two runs are compared
// (scripts/compare): kCritical, the runs are different experiments (refused without
// --force); kVersion, what one compares (printed as "comparing X vs Y"); kIgnored, differs
// on every run; kOther, printed as a note.
enum class ContextComparison { kCritical, kVersion, kIgnored, kOther };
inline constexpr ContextComparison kComparisons[] = {
    ContextComparison::kCritical, ContextComparison::kVersion, ContextComparison::kIgnored,
    ContextComparison::kOther};
struct ComparisonInfo {
  std::string_view name;  // in --describe=json and the scripts
  std::string_view meaning;
};
const ComparisonInfo& Comparison(ContextComparison c);

// One run-context key: who writes it (Google Benchmark, kbench or the scripts), what it
// means, what a difference means to a comparison, whether the results history keeps runs
// that differ in it apart (a series), and when it is written (empty: in every run of its
// writer). A key ending in '.' names a family of keys (client.<setting>).
// `kbench --describe=json` prints the list; the scripts read it there.
struct ContextKey {
  std::string key;
  std::string_view written_by;
  ContextComparison comparison;
  bool series;
  std::string meaning;
  std::string_view when;
};
const std::vector<ContextKey>& ContextKeys();

// How the client connects, from its settings (the last value of a key wins, as in
// librdkafka): `security_protocol` (plaintext, ssl, sasl_plaintext, sasl_ssl; librdkafka's
// default plaintext), `sasl_mechanism` (none unless the protocol is SASL; librdkafka's
// default GSSAPI) and `tls_client_certificate` (true when a client certificate is set).
// Names and mechanisms only: these are never secrets.
ContextEntries SecurityContext(const ContextEntries& client_settings);

}  // namespace kbench
