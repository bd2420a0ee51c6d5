#include "harness/status.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace kbench {
namespace {

StatusOr<std::unique_ptr<int>> Make(bool ok) {
  if (!ok) return Status::Error("no int today");
  return std::make_unique<int>(7);
}

TEST(StatusOr, HoldsTheValueOrTheError) {
  StatusOr<std::unique_ptr<int>> good = Make(true);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(**good, 7);
  std::unique_ptr<int> taken = std::move(*good);  // move-only values move out
  EXPECT_EQ(*taken, 7);

  StatusOr<std::unique_ptr<int>> bad = Make(false);
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(bad);
  EXPECT_EQ(bad.message(), "no int today");
  EXPECT_EQ(bad.status().message(), "no int today");
}

TEST(StatusOr, AnOkStatusWithoutAValueIsAnError) {
  StatusOr<int> odd = Status::Ok();
  EXPECT_FALSE(odd.ok());
  EXPECT_FALSE(odd.message().empty());
}

}  // namespace
}  // namespace kbench
