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

// The machine/build/library part of the run context (DESIGN.md, "Run context"): kbench and
// git versions, build type, compiler and flags, runtime library versions, CPU and kernel.
// `librdkafka_source` is the value of KBENCH_LIBRDKAFKA_SOURCE when set (what the loaded
// library was built from, e.g. "tree:/src/librdkafka@<sha>"), absent otherwise.
// Target-specific keys (target, bootstrap, broker_version, client settings) are added by
// the code that knows them.
ContextEntries CollectBuildAndMachineContext(std::string_view librdkafka_source = {});

// How the client connects, from its settings (the last value of a key wins, as in
// librdkafka): `security_protocol` (plaintext, ssl, sasl_plaintext, sasl_ssl; librdkafka's
// default plaintext), `sasl_mechanism` (none unless the protocol is SASL; librdkafka's
// default GSSAPI) and `tls_client_certificate` (true when a client certificate is set).
// Names and mechanisms only: these are never secrets.
ContextEntries SecurityContext(const ContextEntries& client_settings);

}  // namespace kbench
