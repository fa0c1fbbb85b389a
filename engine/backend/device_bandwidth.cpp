#include "engine/backend/device_bandwidth.h"

#include <fmt/format.h>

#include "engine/backend/cuda/cudart_device_runtime.h"
#include "engine/backend/cuda/device_copy_bandwidth.h"
#include "engine/backend/cuda/emulated_device_runtime.h"
#include "engine/backend/device.h"

namespace tern::engine {
namespace {

std::string cuda_device_name(int device) {
  for (const DeviceInfo& info : discover_devices().devices) {
    if (info.kind == DeviceKind::cuda && info.index == device) {
      return fmt::format("cuda device {}: {}, {:.1f} GiB", device, info.name,
                         static_cast<double>(info.memory_bytes) / (1ull << 30));
    }
  }
  return fmt::format("cuda device {}", device);
}

}  // namespace

Expected<DeviceBandwidth> measure_device_bandwidth(const BackendSpec& spec, std::uint64_t bytes,
                                                   int repetitions) {
  const int device = spec.devices.empty() ? 0 : spec.devices.front();
  std::unique_ptr<cuda::DeviceRuntime> runtime;
  DeviceBandwidth result;
  switch (spec.kind) {
    case BackendKind::cpu:
      return Error{"backend cpu: no device memory to measure (its bound is host RAM)"};
    case BackendKind::cuda_emulated:
      runtime = cuda::make_emulated_device_runtime(spec.emulated);
      result.device = fmt::format(
          "cuda-emulated device {} (host memory: the emulator's device memory is host RAM)",
          device);
      break;
    case BackendKind::cuda: {
      auto made = cuda::make_cuda_device_runtime(device);
      if (!made) return Error{fmt::format("backend cuda: {}", made.error().message)};
      runtime = std::move(*made);
      result.device = cuda_device_name(device);
      break;
    }
  }
  if (Status selected = runtime->set_device(device); !selected.ok()) {
    return Error{fmt::format("backend {}: {}", to_string(spec.kind), selected.message())};
  }
  auto measured = cuda::measure_device_copy_bandwidth(*runtime, bytes, repetitions);
  if (!measured) {
    return Error{fmt::format("backend {}: {}", to_string(spec.kind), measured.error().message)};
  }
  result.bytes_per_second = *measured;
  return result;
}

}  // namespace tern::engine
