#include "tools/tern/backend_option.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>

#include <fmt/format.h>

#include "engine/backend/backend_factory.h"
#include "service/byte_size.h"

namespace tern::tools {
namespace {

// "0,1" -> {0, 1}: ordinals >= 0, none twice.
Expected<std::vector<int>> parse_devices(std::string_view text) {
  std::vector<int> devices;
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    int device = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), device);
    if (item.empty() || error != std::errc() || end != item.data() + item.size()) {
      return Error{fmt::format(
          "--devices must be comma-separated device ordinals such as 0,1, got '{}'", item)};
    }
    if (device < 0)
      return Error{fmt::format("--devices must be device ordinals >= 0, got '{}'", item)};
    if (std::ranges::find(devices, device) != devices.end()) {
      return Error{fmt::format("--devices repeats device {}", device)};
    }
    devices.push_back(device);
    if (comma == std::string_view::npos) return devices;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace

Expected<engine::BackendSpec> parse_backend_options(const Arguments& parsed) {
  engine::BackendSpec spec;
  auto kind = engine::parse_backend_kind(parsed.value("backend").value_or("cpu"));
  if (!kind) return Error{"--" + kind.error().message};
  spec.kind = *kind;
  if (const auto text = parsed.value("gpu-memory-utilization")) {
    auto share = parsed.number("gpu-memory-utilization", 0);
    if (!share) return share.error();
    if (!(*share > 0 && *share <= 1)) {
      return Error{fmt::format("--gpu-memory-utilization must be in (0, 1], got '{}'", *text)};
    }
    spec.cuda.gpu_memory_utilization = *share;
  }
  spec.cuda.cuda_graphs = !parsed.has("no-cuda-graphs");
  if (const auto text = parsed.value("emulated-devices")) {
    auto count = parsed.integer("emulated-devices", 0);
    if (!count) return count.error();
    if (*count < 1 || *count > engine::kMaxEmulatedDevices) {
      return Error{fmt::format("--emulated-devices must be in 1..{}, got '{}'",
                               engine::kMaxEmulatedDevices, *text)};
    }
    spec.emulated.devices = static_cast<int>(*count);
  }
  if (const auto text = parsed.value("emulated-device-memory")) {
    const auto bytes = service::parse_byte_size(*text);
    if (!bytes) {
      return Error{fmt::format(
          "--emulated-device-memory must be a byte size such as 1073741824 or 1GiB, got '{}'",
          *text)};
    }
    if (*bytes == 0)
      return Error{fmt::format("--emulated-device-memory must be > 0, got '{}'", *text)};
    spec.emulated.memory_bytes = *bytes;
  }
  if (const auto text = parsed.value("devices")) {
    auto devices = parse_devices(*text);
    if (!devices) return devices.error();
    spec.devices = std::move(*devices);
    if (!engine::is_cuda(spec.kind)) {
      return Error{"--devices needs --backend cuda or cuda-emulated"};
    }
  }
  if (const auto text = parsed.value("tensor-parallel")) {
    auto ranks = parsed.integer("tensor-parallel", 0);
    if (!ranks) return ranks.error();
    if (*ranks < 1 || *ranks > std::numeric_limits<int>::max()) {
      return Error{fmt::format("--tensor-parallel must be >= 1, got '{}'", *text)};
    }
    spec.tensor_parallel = static_cast<int>(*ranks);
    if (spec.tensor_parallel > 1 && !engine::is_cuda(spec.kind)) {
      return Error{"--tensor-parallel needs --backend cuda or cuda-emulated"};
    }
    if (!spec.devices.empty() &&
        static_cast<std::size_t>(spec.tensor_parallel) != spec.devices.size()) {
      return Error{fmt::format("--tensor-parallel is {} but --devices lists {} device{} ({})",
                               spec.tensor_parallel, spec.devices.size(),
                               spec.devices.size() == 1 ? "" : "s", *parsed.value("devices"))};
    }
  }
  if (spec.kind == engine::BackendKind::cuda_emulated) {
    if (spec.devices.empty() && spec.tensor_parallel > spec.emulated.devices) {
      return Error{fmt::format(
          "--tensor-parallel is {}, which needs emulated devices 0..{}, but --emulated-devices "
          "is {}",
          spec.tensor_parallel, spec.tensor_parallel - 1, spec.emulated.devices)};
    }
    for (const int device : spec.devices) {
      if (device >= spec.emulated.devices) {
        return Error{fmt::format("--devices names emulated device {}, but --emulated-devices is {}",
                                 device, spec.emulated.devices)};
      }
    }
  }
  return spec;
}

std::vector<std::string> ignored_backend_options(const Arguments& parsed,
                                                 engine::BackendKind kind) {
  std::vector<std::string> ignored;
  if (!engine::is_cuda(kind)) {
    for (const OptionSpec& option : {kGpuMemoryUtilizationOption, kNoCudaGraphsOption}) {
      if (parsed.has(option.name)) {
        ignored.push_back(fmt::format("--{} has no effect with --backend cpu", option.name));
      }
    }
  }
  if (kind != engine::BackendKind::cuda_emulated) {
    for (const OptionSpec& option : {kEmulatedDevicesOption, kEmulatedDeviceMemoryOption}) {
      if (parsed.has(option.name)) {
        ignored.push_back(
            fmt::format("--{} has no effect without --backend cuda-emulated", option.name));
      }
    }
  }
  return ignored;
}

Expected<engine::BackendSpec> backend_option(const Arguments& parsed, std::string_view command) {
  auto spec = parse_backend_options(parsed);
  if (!spec) return spec;
  for (const std::string& warning : ignored_backend_options(parsed, spec->kind)) {
    fmt::print(stderr, "tern {}: warning: {}\n", command, warning);
  }
  if (Status available = engine::check_backend_available(*spec); !available.ok()) {
    return available.error();
  }
  return spec;
}

}  // namespace tern::tools
