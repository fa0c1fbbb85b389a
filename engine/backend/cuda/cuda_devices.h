#pragma once

#include <string>
#include <vector>

#include "engine/backend/device.h"

namespace tern::engine::cuda {

struct CudaDiscovery {
  std::vector<DeviceInfo> devices;
  std::string status;  // "runtime 13.0, driver 13.0" or why no device is usable
};

// Asks the CUDA runtime for devices. Without a driver or GPU this returns no devices and a
// status that says so; it never aborts.
CudaDiscovery discover_cuda_devices();

}  // namespace tern::engine::cuda
