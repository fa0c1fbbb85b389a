#include <array>
#include <chrono>

#include <fmt/format.h>

#include "engine/model/model_quantizer.h"
#include "tools/tern/arguments.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {
namespace {

constexpr std::array<OptionSpec, 1> kOptions{{{"help", false, "print this help", 'h'}}};

constexpr std::string_view kUsage =
    "usage: tern quantize IN OUT TYPE\n"
    "  IN    a .gguf file or a Hugging Face directory\n"
    "  OUT   the .gguf file to write\n"
    "  TYPE  F16, BF16, Q8_0, Q4_0, Q4_K or Q6_K\n";

}  // namespace

int command_quantize(std::span<char* const> args) {
  int exit_code = 0;
  const auto parsed = parse_command_line("quantize", args, kOptions, kUsage, exit_code);
  if (!parsed) return exit_code;
  if (parsed->positional().size() != 3) {
    fmt::print(stderr, "tern quantize: expected IN OUT TYPE\n{}", kUsage);
    return kExitUsage;
  }
  const auto& positional = parsed->positional();
  const auto type = kernels::tensor_type_from_name(positional[2]);
  if (!type) {
    fmt::print(stderr, "tern quantize: unknown type '{}'\n{}", positional[2], kUsage);
    return kExitUsage;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto report = engine::quantize_model(positional[0], positional[1], *type);
  if (!report) {
    fmt::print(stderr, "tern quantize: {}\n", report.error().message);
    return kExitUsage;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string types;
  for (const auto& [name, count] : report->tensors_by_type) {
    types += fmt::format("{}{} {}", types.empty() ? "" : ", ", count, name);
  }
  fmt::print("wrote {}: tensors {}; {:.1f} MiB -> {:.1f} MiB in {:.1f} s\n", positional[1], types,
             report->input_bytes / 1048576.0, report->output_bytes / 1048576.0, seconds);
  return 0;
}

TERN_SUBCOMMAND("quantize", "convert a GGUF file or HF directory to a GGUF of another type",
                command_quantize);

}  // namespace tern::tools
