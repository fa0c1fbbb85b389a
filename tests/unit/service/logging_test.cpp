#include "service/logging.h"

#include <gtest/gtest.h>
#include <simdjson.h>
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

TEST(Logging, JsonLinesStayParseableWhateverTheMessage) {
  LoggingConfig config;
  config.format = LogFormat::json;
  ASSERT_TRUE(configure_logging(config, environment_with(std::nullopt, std::nullopt)).ok());
  ::testing::internal::CaptureStderr();
  spdlog::info("quote \" backslash \\ newline \n tab \t bell \x07 done");
  spdlog::default_logger()->flush();
  const std::string line = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(line.empty());
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  simdjson::dom::parser parser;
  simdjson::dom::element record;
  ASSERT_EQ(parser.parse(line).get(record), simdjson::SUCCESS) << line;
  std::string_view message, level;
  ASSERT_EQ(record["message"].get(message), simdjson::SUCCESS);
  ASSERT_EQ(record["level"].get(level), simdjson::SUCCESS);
  EXPECT_EQ(level, "info");
  EXPECT_EQ(message, "quote \" backslash \\ newline \n tab \t bell \x07 done");
}

// A message can carry bytes from a client or a model (a path, a token) that are not UTF-8; the
// line must still be JSON, with each malformed byte shown as U+FFFD.
TEST(Logging, JsonLinesStayValidUtf8) {
  LoggingConfig config;
  config.format = LogFormat::json;
  ASSERT_TRUE(configure_logging(config, environment_with(std::nullopt, std::nullopt)).ok());
  ::testing::internal::CaptureStderr();
  spdlog::info("model \xff\xe2\x82 é");
  spdlog::default_logger()->flush();
  const std::string line = ::testing::internal::GetCapturedStderr();
  simdjson::dom::parser parser;
  simdjson::dom::element record;
  ASSERT_EQ(parser.parse(line).get(record), simdjson::SUCCESS) << line;
  std::string_view message;
  ASSERT_EQ(record["message"].get(message), simdjson::SUCCESS);
  EXPECT_EQ(message, "model \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD é");
}

}  // namespace
}  // namespace tern::service
