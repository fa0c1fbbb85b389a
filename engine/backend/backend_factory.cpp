#include "engine/backend/backend_factory.h"

#include <algorithm>

#include <fmt/format.h>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cudart_device_runtime.h"
#include "engine/backend/cuda/emulated_communicator.h"
#include "engine/backend/cuda/emulated_device_runtime.h"
#include "engine/backend/cuda/nccl_communicator.h"
#include "engine/backend/cuda/tensor_parallel_backend.h"

namespace tern::engine {
namespace {

Error unavailable(const BackendSpec& spec, std::string_view reason) {
  return Error{fmt::format("backend {}: {}", to_string(spec.kind), reason)};
}

// Values the config and the flags refuse, for specs built in code.
Status check_cuda_options(const BackendSpec& spec) {
  const double utilization = spec.cuda.gpu_memory_utilization;
  if (!(utilization > 0 && utilization <= 1)) {
    return unavailable(
        spec, fmt::format("gpu_memory_utilization must be in (0, 1], got {}", utilization));
  }
  if (spec.kind != BackendKind::cuda_emulated) return Status::success();
  if (spec.emulated.devices < 1 || spec.emulated.devices > kMaxEmulatedDevices) {
    return unavailable(spec, fmt::format("the emulated device count must be in 1..{}, got {}",
                                         kMaxEmulatedDevices, spec.emulated.devices));
  }
  if (spec.emulated.memory_bytes == 0) {
    return unavailable(spec, "the emulated device memory must be > 0 bytes");
  }
  return Status::success();
}

// The ranks' devices: `devices`, or 0..tensor_parallel-1 (backend_spec.h).
Expected<std::vector<int>> rank_devices(const BackendSpec& spec) {
  auto devices = tensor_parallel_devices(spec);
  if (!devices) return unavailable(spec, devices.error().message);
  return devices;
}

// The emulator is built into every tern, so only the emulated machine's size can be short.
Status check_emulated_available(const BackendSpec& spec) {
  auto devices = rank_devices(spec);
  if (!devices) return devices.error();
  for (const int device : *devices) {
    if (device < 0 || device >= spec.emulated.devices) {
      return unavailable(
          spec, fmt::format("there is no emulated CUDA device {}; the emulated machine has {}",
                            device, spec.emulated.devices));
    }
  }
  return Status::success();
}

// One device: a CudaBackend on the engine's thread. Several: a TensorParallelBackend, a rank
// per device, each on its own thread, over one runtime and a communicator per rank (emulated,
// or NCCL loaded at run time).
Expected<std::unique_ptr<Backend>> create_cuda_backend(const BackendSpec& spec,
                                                       const ModelWeights& weights) {
  auto devices = rank_devices(spec);
  if (!devices) return devices.error();
  std::unique_ptr<cuda::DeviceRuntime> runtime;
  if (spec.kind == BackendKind::cuda_emulated) {
    runtime = cuda::make_emulated_device_runtime(spec.emulated);
  } else {
    auto made = cuda::make_cuda_device_runtime(devices->front());
    if (!made) return unavailable(spec, made.error().message);
    runtime = std::move(*made);
  }
  if (devices->size() == 1) {
    auto backend = cuda::CudaBackend::create(std::move(runtime), devices->front(), weights,
                                             spec.options, spec.cuda);
    if (!backend) return unavailable(spec, backend.error().message);
    return std::unique_ptr<Backend>(std::move(*backend));
  }
  auto communicators = spec.kind == BackendKind::cuda_emulated
                           ? cuda::make_emulated_communicators(*runtime, *devices)
                           : cuda::make_nccl_communicators(*devices);
  if (!communicators) return unavailable(spec, communicators.error().message);
  auto backend = cuda::TensorParallelBackend::create(
      std::shared_ptr<cuda::DeviceRuntime>(std::move(runtime)), *devices, weights, spec.options,
      spec.cuda, std::move(*communicators));
  if (!backend) return unavailable(spec, backend.error().message);
  return std::unique_ptr<Backend>(std::move(*backend));
}

}  // namespace

Status check_backend_available(const BackendSpec& spec, const DeviceReport& devices) {
  if (spec.kind == BackendKind::cpu) {
    if (!spec.devices.empty()) {
      return unavailable(
          spec, "devices are CUDA ordinals, only valid with backend cuda or cuda-emulated");
    }
    return Status::success();
  }
  if (Status options = check_cuda_options(spec); !options.ok()) return options;
  if (spec.kind == BackendKind::cuda_emulated) return check_emulated_available(spec);
  if (!devices.cuda_compiled) {
    return unavailable(spec, "no CUDA in this build (built with TERN_CUDA=OFF or without nvcc)");
  }
  const auto cuda_devices =
      static_cast<int>(std::ranges::count(devices.devices, DeviceKind::cuda, &DeviceInfo::kind));
  if (cuda_devices == 0) {
    return unavailable(spec,
                       devices.cuda_status.empty() ? "no CUDA device found" : devices.cuda_status);
  }
  auto ranks = rank_devices(spec);
  if (!ranks) return ranks.error();
  for (const int device : *ranks) {
    if (device < 0 || device >= cuda_devices) {
      return unavailable(spec, fmt::format("there is no CUDA device {}; this machine has {} ({})",
                                           device, cuda_devices, devices.cuda_status));
    }
  }
  return Status::success();
}

Status check_backend_available(const BackendSpec& spec) {
  if (spec.kind != BackendKind::cuda) return check_backend_available(spec, DeviceReport{});
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
    case BackendKind::cuda_emulated:
    case BackendKind::cuda:
      return create_cuda_backend(spec, weights);
  }
  return unavailable(spec, "unknown backend kind");
}

}  // namespace tern::engine
