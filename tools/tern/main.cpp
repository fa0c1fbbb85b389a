#include <array>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "tools/tern/subcommands.h"

namespace {

struct Subcommand {
  std::string_view name;
  int (*run)(std::span<char* const> args);
  std::string_view summary;
};

constexpr std::array<Subcommand, 2> kSubcommands{{
    {"serve", tern::tools::command_serve, "serve models over the OpenAI-compatible HTTP API"},
    {"version", tern::tools::command_version, "print version, build, CPU features and devices"},
}};

void print_usage(std::FILE* out) {
  fmt::print(out, "tern: an LLM inference server with an OpenAI-compatible API\n\n");
  fmt::print(out, "usage: tern <command> [options]\n       tern --version | --help\n\n");
  fmt::print(out, "commands:\n");
  for (const Subcommand& command : kSubcommands) {
    fmt::print(out, "  {:<12} {}\n", command.name, command.summary);
  }
  fmt::print(out, "\nRun 'tern <command> --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return tern::tools::kExitUsage;
  }
  const std::string_view first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    print_usage(stdout);
    return 0;
  }
  if (first == "--version") return tern::tools::command_version({});
  for (const Subcommand& command : kSubcommands) {
    if (command.name == first) {
      return command.run(std::span<char* const>(argv + 2, static_cast<std::size_t>(argc - 2)));
    }
  }
  fmt::print(stderr, "tern: unknown command '{}'\n\n", first);
  print_usage(stderr);
  return tern::tools::kExitUsage;
}
