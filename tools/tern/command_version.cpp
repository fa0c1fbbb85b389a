#include <fmt/format.h>

#include "engine/backend/device.h"
#include "kernels/cpu/cpu_features.h"
#include "tools/tern/build_info.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {

int command_version(std::span<char* const>) {
  const BuildInfo& info = build_info();
  fmt::print("tern {}\n", info.version);
  fmt::print("git: {}\n", info.git_sha);
  fmt::print("build: {} ({})\n", info.build_type, info.compiler);
  fmt::print("cpu features: {}\n", kernels::describe_cpu_features(kernels::cpu_features()));
  const engine::DeviceReport report = engine::discover_devices();
  fmt::print("cuda: {}\n", report.cuda_compiled ? fmt::format("compiled in; {}", report.cuda_status)
                                                : report.cuda_status);
  for (const engine::DeviceInfo& device : report.devices) {
    fmt::print("device {}:{}: {} ({}, {:.1f} GiB)\n", engine::to_string(device.kind), device.index,
               device.name, device.detail, static_cast<double>(device.memory_bytes) / (1ull << 30));
  }
  return 0;
}

TERN_SUBCOMMAND("version", "print version, build, CPU features and devices", command_version);

}  // namespace tern::tools
