#include "tools/tern/arguments.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace tern::tools {

Expected<Arguments> Arguments::parse(std::span<char* const> args,
                                     std::span<const OptionSpec> specs) {
  Arguments parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    const bool is_long = arg.size() >= 3 && arg.substr(0, 2) == "--";
    const bool is_short = !is_long && arg.size() == 2 && arg[0] == '-' && arg[1] != '-';
    if (!is_long && !is_short) {
      parsed.positional_.emplace_back(arg);
      continue;
    }
    arg.remove_prefix(is_long ? 2 : 1);
    std::optional<std::string> inline_value;
    if (const auto equals = arg.find('='); is_long && equals != std::string_view::npos) {
      inline_value = std::string(arg.substr(equals + 1));
      arg = arg.substr(0, equals);
    }
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& candidate : specs) {
      if (is_long ? candidate.name == arg : candidate.short_name == arg[0]) spec = &candidate;
    }
    if (spec == nullptr) {
      return Error{fmt::format("unknown option {}{}", is_long ? "--" : "-", arg)};
    }
    arg = spec->name;
    std::string value;
    if (spec->takes_value) {
      if (inline_value) {
        value = *inline_value;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Error{fmt::format("option --{} needs a value", arg)};
      }
    } else if (inline_value) {
      return Error{fmt::format("option --{} takes no value", arg)};
    }
    parsed.values_[std::string(arg)] = std::move(value);
  }
  return parsed;
}

std::optional<std::string> Arguments::value(std::string_view name) const {
  const auto found = values_.find(std::string(name));
  if (found == values_.end()) return std::nullopt;
  return found->second;
}

Expected<long long> Arguments::integer(std::string_view name, long long fallback) const {
  const auto text = value(name);
  if (!text) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || errno == ERANGE) {
    return Error{fmt::format("option --{} must be an integer, got '{}'", name, *text)};
  }
  return parsed;
}

Expected<double> Arguments::number(std::string_view name, double fallback) const {
  const auto text = value(name);
  if (!text) return fallback;
  char* end = nullptr;
  const double parsed = std::strtod(text->c_str(), &end);
  if (text->empty() || *end != '\0' || !std::isfinite(parsed)) {
    return Error{fmt::format("option --{} must be a number, got '{}'", name, *text)};
  }
  return parsed;
}

std::string describe_options(std::span<const OptionSpec> specs) {
  std::string out;
  for (const OptionSpec& spec : specs) {
    const std::string left = fmt::format("--{}{}", spec.name, spec.takes_value ? " VALUE" : "");
    out += fmt::format("  {:<24} {}\n", left, spec.help);
  }
  return out;
}

std::optional<Arguments> parse_command_line(std::string_view command, std::span<char* const> args,
                                            std::span<const OptionSpec> specs,
                                            std::string_view usage, int& exit_code) {
  auto parsed = Arguments::parse(args, specs);
  if (!parsed) {
    fmt::print(stderr, "tern {}: {}\n{}{}", command, parsed.error().message, usage,
               describe_options(specs));
    exit_code = 2;
    return std::nullopt;
  }
  if (parsed->has("help")) {
    fmt::print("{}{}", usage, describe_options(specs));
    exit_code = 0;
    return std::nullopt;
  }
  return std::move(*parsed);
}

}  // namespace tern::tools
