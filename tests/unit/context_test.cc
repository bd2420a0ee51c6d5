#include "harness/context.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace kbench {
namespace {

TEST(Context, SecretsAreRedacted) {
  for (const char* key :
       {"sasl.password", "sasl.username", "ssl.key.password", "ssl.key.pem",
        "ssl.keystore.password", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config",
        "SASL.PASSWORD", "sasl.jaas.config", "ssl_key", "my.token"}) {
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
  for (const auto& [k, v] : CollectBuildAndMachineContext()) ctx[k] = v;
  for (const char* key : {"kbench_version", "git_sha", "git_dirty", "build_type", "compiler",
                          "cxx_flags", "librdkafka_version", "zlib_version", "zstd_version",
                          "lz4_version", "snappy_version", "cpu_model", "kernel"}) {
    ASSERT_TRUE(ctx.count(key)) << key;
  }
  for (const char* key : {"kbench_version", "librdkafka_version", "zstd_version", "compiler"}) {
    EXPECT_FALSE(ctx[key].empty()) << key;
  }
  EXPECT_TRUE(ctx["git_dirty"] == "true" || ctx["git_dirty"] == "false");
}

// The files that ran, so a profile or result says whether symbol builds were used.
TEST(Context, LoadedLibrariesNameTheFilesThatRan) {
  std::map<std::string, std::string> ctx;
  for (const auto& [k, v] : CollectBuildAndMachineContext()) ctx[k] = v;
  const std::string& libs = ctx["loaded_libraries"];
  for (const char* soname :
       {"librdkafka.so.1=/", "libzstd.so.1=/", "liblz4.so.1=/", "libz.so.1=/"}) {
    EXPECT_NE(libs.find(soname), std::string::npos) << soname << " in " << libs;
  }
  // Resolved to the real file (libzstd.so.1.5.4), not the SONAME link.
  const size_t at = libs.find("libzstd.so.1=");
  ASSERT_NE(at, std::string::npos);
  const std::string path = libs.substr(at, libs.find(',', at) - at);
  EXPECT_NE(path.find("/libzstd.so.1."), std::string::npos) << path;
}

}  // namespace
}  // namespace kbench
