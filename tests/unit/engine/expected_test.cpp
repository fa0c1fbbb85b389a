#include "engine/expected.h"

#include <gtest/gtest.h>

#include <memory>

namespace tern {
namespace {

Expected<int> parse_digit(char c) {
  if (c < '0' || c > '9') return Error{std::string("not a digit: ") + c};
  return c - '0';
}

TEST(Expected, CarriesValueOrError) {
  const auto good = parse_digit('7');
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  const auto bad = parse_digit('x');
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "not a digit: x");
}

TEST(Expected, MovesOnlyValuesOut) {
  Expected<std::unique_ptr<int>> boxed(std::make_unique<int>(3));
  std::unique_ptr<int> taken = std::move(boxed).value();
  EXPECT_EQ(*taken, 3);
}

TEST(Status, DefaultIsSuccess) {
  EXPECT_TRUE(Status().ok());
  const Status failed = Error{"disk full"};
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.message(), "disk full");
}

}  // namespace
}  // namespace tern
