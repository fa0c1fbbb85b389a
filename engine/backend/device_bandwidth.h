#pragma once

// The memory bandwidth of the device a BackendSpec runs on, for rooflines (`tern bench`): the
// CPU backend's bound is host RAM, read by the compute threads (tools/tern/memory_bandwidth.h);
// a CUDA backend's is its device's memory, measured here through the same DeviceRuntime the
// backend would use.

#include <cstdint>
#include <string>

#include "engine/backend/backend_spec.h"
#include "engine/expected.h"

namespace tern::engine {

struct DeviceBandwidth {
  // Bytes read plus bytes written per second by device-to-device copies
  // (engine/backend/cuda/device_copy_bandwidth.h).
  double bytes_per_second = 0;
  // Which memory that was, for a reader of the numbers: "cuda device 0: NVIDIA H100 80GB HBM3"
  // or "cuda-emulated device 0 (host memory: the emulator's device memory is host RAM)".
  std::string device;
};

// Measures the memory of the first device of `spec` (device 0 when it names none) with
// `repetitions` copies of `bytes`. Call it before the backend takes the device's memory: the
// probe allocates 2 x `bytes` there and frees them before returning. An error for the cpu
// backend, and where the device cannot be reached or the buffers do not fit (the message names
// the backend and CUDA's reason).
Expected<DeviceBandwidth> measure_device_bandwidth(const BackendSpec& spec, std::uint64_t bytes,
                                                   int repetitions);

}  // namespace tern::engine
