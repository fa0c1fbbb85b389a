#pragma once

#include <span>

namespace tern::tools {

// Each subcommand gets the arguments after its name and returns the process exit code:
// 0 on success, 1 on a runtime failure, 2 on a usage or input error.
int command_version(std::span<char* const> args);
int command_serve(std::span<char* const> args);

inline constexpr int kExitUsage = 2;

}  // namespace tern::tools
