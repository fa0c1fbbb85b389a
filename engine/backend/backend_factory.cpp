#include "engine/backend/backend_factory.h"

#include <algorithm>

#include <fmt/format.h>

#include "engine/backend/cpu/cpu_backend.h"

namespace tern::engine {
namespace {

Error unavailable(const BackendSpec& spec, std::string_view reason) {
  return Error{fmt::format("backend {}: {}", to_string(spec.kind), reason)};
}

}  // namespace

Status check_backend_available(const BackendSpec& spec, const DeviceReport& devices) {
  if (spec.kind == BackendKind::cpu) {
    if (!spec.devices.empty()) {
      return unavailable(spec, "devices are CUDA ordinals, only valid with backend cuda");
    }
    return Status::success();
  }
  if (!devices.cuda_compiled) {
    return unavailable(spec, "no CUDA in this build (built with TERN_CUDA=OFF or without nvcc)");
  }
  const auto cuda_devices =
      static_cast<int>(std::ranges::count(devices.devices, DeviceKind::cuda, &DeviceInfo::kind));
  if (cuda_devices == 0) {
    return unavailable(spec,
                       devices.cuda_status.empty() ? "no CUDA device found" : devices.cuda_status);
  }
  for (const int device : spec.devices) {
    if (device < 0 || device >= cuda_devices) {
      return unavailable(spec, fmt::format("there is no CUDA device {}; this machine has {} ({})",
                                           device, cuda_devices, devices.cuda_status));
    }
  }
  return unavailable(spec, kNoCudaBackendYet);
}

Status check_backend_available(const BackendSpec& spec) {
  if (spec.kind == BackendKind::cpu) return check_backend_available(spec, DeviceReport{});
  return check_backend_available(spec, discover_devices());
}

Expected<std::unique_ptr<Backend>> create_backend(const BackendSpec& spec,
                                                  const ModelWeights& weights,
                                                  kernels::ThreadPool& pool) {
  if (Status available = check_backend_available(spec); !available.ok()) {
    return available.error();
  }
  switch (spec.kind) {
    case BackendKind::cpu: {
      CpuBackendOptions options;
      options.max_sequences = spec.options.max_sequences;
      options.max_batch_tokens = spec.options.max_batch_tokens;
      options.max_context = spec.options.max_context;
      auto backend = CpuBackend::create(weights, pool, options);
      if (!backend) return backend.error();
      return std::unique_ptr<Backend>(std::move(*backend));
    }
    case BackendKind::cuda:
      break;
  }
  return unavailable(spec, kNoCudaBackendYet);
}

}  // namespace tern::engine
