#include "engine/backend/cuda/cuda_devices.h"

#include <cuda_runtime_api.h>

#include <fmt/format.h>

namespace tern::engine::cuda {

CudaDiscovery discover_cuda_devices() {
  CudaDiscovery discovery;
  int runtime_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  int driver_version = 0;
  cudaDriverGetVersion(&driver_version);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    discovery.status = fmt::format("no CUDA device found ({}: {})", cudaGetErrorName(status),
                                   cudaGetErrorString(status));
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return discovery;
  }
  discovery.status = fmt::format("runtime {}.{}, driver {}.{}", runtime_version / 1000,
                                 (runtime_version % 1000) / 10, driver_version / 1000,
                                 (driver_version % 1000) / 10);
  for (int index = 0; index < count; ++index) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) continue;
    DeviceInfo device;
    device.kind = DeviceKind::cuda;
    device.index = index;
    device.name = properties.name;
    device.memory_bytes = properties.totalGlobalMem;
    device.detail = fmt::format("sm_{}{}", properties.major, properties.minor);
    discovery.devices.push_back(std::move(device));
  }
  return discovery;
}

}  // namespace tern::engine::cuda
