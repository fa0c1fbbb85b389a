#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expected.h"

namespace tern::tools {

struct OptionSpec {
  std::string_view name;  // without the leading dashes
  bool takes_value = false;
  std::string_view help;
  char short_name = 0;  // `-n` for `--name`, or 0
};

// Command-line options of one subcommand: `--name value`, `--name=value`, `-n value`, boolean
// `--name`, and positional arguments. Unknown options are errors, so typos never pass silently.
class Arguments {
 public:
  static Expected<Arguments> parse(std::span<char* const> args, std::span<const OptionSpec> specs);

  bool has(std::string_view name) const { return values_.contains(std::string(name)); }
  std::optional<std::string> value(std::string_view name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // Integer and number options with a default; errors name the option.
  Expected<long long> integer(std::string_view name, long long fallback) const;
  Expected<double> number(std::string_view name, double fallback) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// "  --name VALUE   help" lines for a usage message.
std::string describe_options(std::span<const OptionSpec> specs);

// A subcommand's arguments with the usual handling done: on a usage error it prints the error,
// `usage` and the options to stderr and sets exit_code to 2; on --help it prints them to stdout
// and sets exit_code to 0. Either way it returns nullopt and the command returns exit_code.
std::optional<Arguments> parse_command_line(std::string_view command, std::span<char* const> args,
                                            std::span<const OptionSpec> specs,
                                            std::string_view usage, int& exit_code);

}  // namespace tern::tools
