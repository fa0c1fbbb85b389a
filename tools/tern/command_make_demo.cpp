#include <array>
#include <string_view>

#include <fmt/format.h>

#include "engine/model/demo_model.h"
#include "tools/tern/arguments.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {
namespace {

constexpr std::array<OptionSpec, 1> kOptions{{
    {"help", false, "print this help", 'h'},
}};

constexpr std::string_view kUsage =
    "usage: tern make-demo OUT.gguf\n"
    "Writes the demo model: llama architecture, byte-level vocabulary, seeded random weights\n"
    "(about 4 MB, the same bytes every time). Its text is random.\n";

}  // namespace

int command_make_demo(std::span<char* const> args) {
  int exit_code = 0;
  const auto parsed = parse_command_line("make-demo", args, kOptions, kUsage, exit_code);
  if (!parsed) return exit_code;
  if (parsed->positional().size() != 1) {
    fmt::print(stderr, "{}", kUsage);
    return kExitUsage;
  }
  const std::string& path = parsed->positional().front();
  if (Status written = engine::write_demo_model(path); !written) {
    fmt::print(stderr, "tern make-demo: {}\n", written.message());
    return kExitFailure;
  }
  fmt::print(stderr, "wrote {} ({})\n", path, engine::kDemoModelNote);
  return 0;
}

TERN_SUBCOMMAND("make-demo", "write the small random-weight demo model", command_make_demo);

}  // namespace tern::tools
