#include <array>
#include <string_view>

#include <fmt/format.h>

#include "service/config.h"
#include "tools/tern/arguments.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {
namespace {

constexpr std::array<OptionSpec, 3> kOptions{{
    {"config", true, "YAML file that lists the server settings and the models to serve"},
    {"check", false, "validate the config, print the effective config and exit"},
    {"help", false, "print this help"},
}};

constexpr std::string_view kUsage = "usage: tern serve --config FILE [--check]\n";

}  // namespace

int command_serve(std::span<char* const> args) {
  const auto parsed = Arguments::parse(args, kOptions);
  if (!parsed) {
    fmt::print(stderr, "tern serve: {}\n{}{}", parsed.error().message, kUsage,
               describe_options(kOptions));
    return kExitUsage;
  }
  if (parsed->has("help")) {
    fmt::print("{}{}", kUsage, describe_options(kOptions));
    return 0;
  }
  const auto config_path = parsed->value("config");
  if (!config_path) {
    fmt::print(stderr, "tern serve: --config FILE is required\n");
    return kExitUsage;
  }
  const auto config = service::load_config_file(*config_path);
  if (!config) {
    fmt::print(stderr, "{}\n", config.error().message);
    return kExitUsage;
  }
  if (parsed->has("check")) {
    fmt::print("{}", service::dump_config(*config));
    return 0;
  }
  fmt::print(stderr, "tern serve: the HTTP server is not built yet; only --check is available\n");
  return kExitUsage;
}

TERN_SUBCOMMAND("serve", "serve models over the OpenAI-compatible HTTP API", command_serve);

}  // namespace tern::tools
