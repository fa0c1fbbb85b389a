#include "service/logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

namespace tern::service {
namespace {

EnvironmentLookup environment_with(std::optional<std::string> level,
                                   std::optional<std::string> format) {
  return [=](std::string_view name) -> std::optional<std::string> {
    if (name == "TERN_LOG_LEVEL") return level;
    if (name == "TERN_LOG_FORMAT") return format;
    return std::nullopt;
  };
}

TEST(Logging, LevelFromConfig) {
  LoggingConfig config;
  config.level = "warn";
  ASSERT_TRUE(configure_logging(config, environment_with(std::nullopt, std::nullopt)).ok());
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::warn);
}

TEST(Logging, EnvironmentOverridesConfig) {
  LoggingConfig config;
  config.level = "warn";
  ASSERT_TRUE(configure_logging(config, environment_with("debug", "json")).ok());
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::debug);
}

TEST(Logging, RejectsBadEnvironmentValues) {
  const LoggingConfig config;
  const Status bad_level = configure_logging(config, environment_with("chatty", std::nullopt));
  ASSERT_FALSE(bad_level.ok());
  EXPECT_NE(bad_level.message().find("chatty"), std::string::npos);
  const Status bad_format = configure_logging(config, environment_with(std::nullopt, "xml"));
  ASSERT_FALSE(bad_format.ok());
  EXPECT_EQ(bad_format.message(), "TERN_LOG_FORMAT must be text or json, got 'xml'");
}

}  // namespace
}  // namespace tern::service
