#include "service/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include "engine/json_string.h"

namespace tern::service {
namespace {

// %j: the message as the body of a JSON string, so JSON-lines logs stay parseable whatever the
// message holds.
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&,
              spdlog::memory_buf_t& out) override {
    escaped_.clear();
    append_json_escaped(escaped_, std::string_view(message.payload.data(), message.payload.size()));
    out.append(escaped_.data(), escaped_.data() + escaped_.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return spdlog::details::make_unique<JsonEscapedMessage>();
  }

 private:
  // Reused from line to line: each sink formats under its own lock, with its own clone.
  std::string escaped_;
};

}  // namespace

Status configure_logging(const LoggingConfig& config, const EnvironmentLookup& environment) {
  std::string level_name = config.level;
  if (auto from_env = environment("TERN_LOG_LEVEL")) level_name = *from_env;
  const spdlog::level::level_enum level = spdlog::level::from_str(level_name);
  if (level == spdlog::level::off && level_name != "off") {
    return Error{
        fmt::format("log level '{}' is not one of trace, debug, info, warn, error, "
                    "critical, off",
                    level_name)};
  }
  LogFormat format = config.format;
  if (auto from_env = environment("TERN_LOG_FORMAT")) {
    if (*from_env == "json") {
      format = LogFormat::json;
    } else if (*from_env == "text") {
      format = LogFormat::text;
    } else {
      return Error{fmt::format("TERN_LOG_FORMAT must be text or json, got '{}'", *from_env)};
    }
  }

  auto logger =
      std::make_shared<spdlog::logger>("tern", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (format == LogFormat::json) {
    formatter->add_flag<JsonEscapedMessage>('j').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","thread":%t,"message":"%j"})");
  } else {
    formatter->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %v");
  }
  logger->set_formatter(std::move(formatter));
  logger->set_level(level);
  spdlog::set_default_logger(std::move(logger));
  return Status::success();
}

}  // namespace tern::service
