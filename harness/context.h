#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kbench {

using ContextEntries = std::vector<std::pair<std::string, std::string>>;

// True when a client setting's value must never reach results or logs: passwords,
// secrets, SASL credentials, key material, tokens.
bool IsSecretSetting(std::string_view key);

// "***" for secret settings, the value otherwise.
std::string RedactedValue(std::string_view key, std::string_view value);

// The machine/build/library part of the run context (DESIGN.md, "Run context"): kbench and
// git versions, build type, compiler and flags, runtime library versions, CPU and kernel.
// Target-specific keys (target, bootstrap, broker_version, client settings) are added by
// the code that knows them.
ContextEntries CollectBuildAndMachineContext();

}  // namespace kbench
