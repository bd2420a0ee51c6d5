#include "harness/context.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "harness/codec.h"

namespace kbench {
namespace {

TEST(Context, SecretsAreRedacted) {
  for (const char* key : {"sasl.password", "sasl.username", "ssl.key.password", "ssl.key.pem",
                          "ssl.keystore.password", "sasl.oauthbearer.client.secret",
                          "sasl.oauthbearer.config", "SASL.PASSWORD", "sasl.jaas.config", "ssl_key",
                          "my.token", "ssl.key.location", "ssl.ca.pem"}) {
    EXPECT_TRUE(IsSecretSetting(key)) << key;
    EXPECT_EQ(RedactedValue(key, "hunter2"), "***") << key;
  }
  for (const char* key : {"bootstrap.servers", "acks", "compression.codec", "linger.ms",
                          "security.protocol", "sasl.mechanisms", "ssl.ca.location"}) {
    EXPECT_FALSE(IsSecretSetting(key)) << key;
    EXPECT_EQ(RedactedValue(key, "v"), "v") << key;
  }
}

TEST(Context, BuildAndMachineKeysArePresentAndFilled) {
  std::map<std::string, std::string> ctx;
  for (const auto& [k, v] : CollectBuildAndMachineContext()) {
    EXPECT_FALSE(v.empty()) << k;
    ctx[k] = v;
  }
  // One version key per shared library: librdkafka's and each codec library's.
  for (const SharedLibrary& lib : SharedLibraries()) {
    EXPECT_FALSE(ctx[std::string(lib.version_key)].empty()) << lib.version_key;
  }
  EXPECT_TRUE(ctx["git_dirty"] == "true" || ctx["git_dirty"] == "false");
}

TEST(Context, SecurityContextNamesProtocolAndMechanismOnly) {
  auto as_map = [](const ContextEntries& entries) {
    return std::map<std::string, std::string>(entries.begin(), entries.end());
  };
  auto plain = as_map(SecurityContext({{"acks", "all"}}));
  EXPECT_EQ(plain["security_protocol"], "plaintext");
  EXPECT_EQ(plain["sasl_mechanism"], "none");
  EXPECT_EQ(plain["tls_client_certificate"], "false");

  auto sasl = as_map(SecurityContext({{"security.protocol", "SASL_SSL"},
                                      {"sasl.mechanisms", "SCRAM-SHA-512"},
                                      {"sasl.username", "kbench"},
                                      {"sasl.password", "hunter2"}}));
  EXPECT_EQ(sasl["security_protocol"], "sasl_ssl");
  EXPECT_EQ(sasl["sasl_mechanism"], "SCRAM-SHA-512");
  for (const auto& [key, value] : sasl) {
    EXPECT_EQ(value.find("hunter2"), std::string::npos) << key;
    EXPECT_EQ(value.find("kbench"), std::string::npos) << key;
  }
  // librdkafka's default mechanism, the alias, and the last value winning.
  EXPECT_EQ(as_map(SecurityContext({{"security.protocol", "sasl_plaintext"}}))["sasl_mechanism"],
            "GSSAPI");
  EXPECT_EQ(as_map(SecurityContext({{"security.protocol", "sasl_plaintext"},
                                    {"sasl.mechanism", "PLAIN"}}))["sasl_mechanism"],
            "PLAIN");
  auto mtls = as_map(SecurityContext({{"security.protocol", "ssl"},
                                      {"ssl.certificate.location", "/c.pem"},
                                      {"security.protocol", "SSL"}}));
  EXPECT_EQ(mtls["security_protocol"], "ssl");
  EXPECT_EQ(mtls["sasl_mechanism"], "none");
  EXPECT_EQ(mtls["tls_client_certificate"], "true");
}

// Two commits of one release print one version; the source the caller names tells them
// apart (kbench's options read it from KBENCH_LIBRDKAFKA_SOURCE).
TEST(Context, LibrdkafkaSourceIsRecordedWhenGiven) {
  auto source_of = [](std::string_view source) {
    for (const auto& [k, v] : CollectBuildAndMachineContext(source)) {
      if (k == "librdkafka_source") return v;
    }
    return std::string("<absent>");
  };
  EXPECT_EQ(source_of("tree:/src/librdkafka@0123abcd"), "tree:/src/librdkafka@0123abcd");
  EXPECT_EQ(source_of(""), "<absent>");
}

// The files that ran, so a profile or result says whether symbol builds were used.
TEST(Context, LoadedLibrariesNameTheFilesThatRan) {
  std::map<std::string, std::string> ctx;
  for (const auto& [k, v] : CollectBuildAndMachineContext()) ctx[k] = v;
  const std::string& libs = ctx["loaded_libraries"];
  for (const SharedLibrary& lib : SharedLibraries()) {
    const std::string entry = std::string(lib.soname) + "=/";
    EXPECT_NE(libs.find(entry), std::string::npos) << entry << " in " << libs;
  }
  // Resolved to the real file (libzstd.so.1.5.4), not the SONAME link.
  const std::string soname(SharedLibraries().back().soname);
  const size_t at = libs.find(soname + "=");
  ASSERT_NE(at, std::string::npos);
  const std::string path = libs.substr(at, libs.find(',', at) - at);
  EXPECT_NE(path.find("/" + soname + "."), std::string::npos) << path;
}

// The version function each library row names is the one the library exports, and it
// reports the version the context records (the scripts ask a library by that name).
TEST(Context, LibraryVersionFunctionsAreTheLibrariesOwn) {
  std::map<std::string, std::string> ctx;
  for (const auto& [k, v] : CollectBuildAndMachineContext()) ctx[k] = v;
  for (const SharedLibrary& lib : SharedLibraries()) {
    ASSERT_FALSE(lib.version_key.empty()) << lib.name;
    EXPECT_TRUE(ctx.count(std::string(lib.version_key))) << lib.version_key;
    if (lib.version_function.empty()) continue;
    using VersionFn = const char* (*)();
    auto fn =
        reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, std::string(lib.version_function).c_str()));
    ASSERT_NE(fn, nullptr) << lib.version_function;
    EXPECT_EQ(ctx[std::string(lib.version_key)], fn()) << lib.name;
  }
}

// Every key the run context writes is described (ContextKeys(), kbench --describe=json).
TEST(Context, EveryKeyWrittenIsDescribed) {
  auto described = [](const std::string& key) {
    for (const ContextKey& k : ContextKeys()) {
      if (k.key == key || (k.key.ends_with('.') && key.starts_with(k.key))) return true;
    }
    return false;
  };
  ContextEntries written = CollectBuildAndMachineContext("tree:/src@0123");
  for (const auto& entry : SecurityContext({})) written.push_back(entry);
  for (const auto& [key, value] : written) EXPECT_TRUE(described(key)) << key;
  EXPECT_TRUE(described("client.acks"));
  EXPECT_FALSE(described("no_such_key"));
}

}  // namespace
}  // namespace kbench
