#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace tern::tools {

// A subcommand gets the arguments after its name and returns the process exit code:
// 0 on success, 1 on a runtime failure, 2 on a usage or input error.
using SubcommandMain = int (*)(std::span<char* const> args);

struct Subcommand {
  std::string_view name;
  std::string_view summary;
  SubcommandMain run;
};

inline constexpr int kExitUsage = 2;
inline constexpr int kExitFailure = 1;
// tern serve: the drain timeout ran out and cut requests that were still running.
inline constexpr int kExitDrainIncomplete = 3;

// Every command_*.cpp registers itself with TERN_SUBCOMMAND, so adding a subcommand touches no
// shared file. Sorted by name.
const std::vector<Subcommand>& subcommands();
bool register_subcommand(Subcommand command);

#define TERN_SUBCOMMAND(name, summary, function)                             \
  [[maybe_unused]] static const bool tern_subcommand_registered_##function = \
      ::tern::tools::register_subcommand(::tern::tools::Subcommand{name, summary, function})

// `tern --version` prints the same as `tern version`.
int command_version(std::span<char* const> args);

}  // namespace tern::tools
