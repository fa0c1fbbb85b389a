#include <algorithm>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "service/logging.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {

namespace {
std::vector<Subcommand>& registry() {
  static std::vector<Subcommand> commands;
  return commands;
}
}  // namespace

bool register_subcommand(Subcommand command) {
  auto& commands = registry();
  commands.insert(
      std::upper_bound(commands.begin(), commands.end(), command,
                       [](const Subcommand& a, const Subcommand& b) { return a.name < b.name; }),
      command);
  return true;
}

const std::vector<Subcommand>& subcommands() {
  return registry();
}

}  // namespace tern::tools

namespace {

void print_usage(std::FILE* out) {
  fmt::print(out, "tern: an LLM inference server with an OpenAI-compatible API\n\n");
  fmt::print(out, "usage: tern <command> [options]\n       tern --version | --help\n\n");
  fmt::print(out, "commands:\n");
  for (const tern::tools::Subcommand& command : tern::tools::subcommands()) {
    fmt::print(out, "  {:<16} {}\n", command.name, command.summary);
  }
  fmt::print(out, "\nRun 'tern <command> --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  // Logs go to stderr from the first line on, so stdout carries only a command's output.
  if (const tern::Status logging = tern::service::configure_logging({}); !logging.ok()) {
    fmt::print(stderr, "tern: {}\n", logging.message());
    return tern::tools::kExitUsage;
  }
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
  for (const tern::tools::Subcommand& command : tern::tools::subcommands()) {
    if (command.name == first) {
      return command.run(std::span<char* const>(argv + 2, static_cast<std::size_t>(argc - 2)));
    }
  }
  fmt::print(stderr, "tern: unknown command '{}'\n\n", first);
  print_usage(stderr);
  return tern::tools::kExitUsage;
}
