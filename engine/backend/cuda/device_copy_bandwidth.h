#pragma once

// The memory bandwidth of a device, measured with device-to-device copies: the bound `tern bench`
// compares decode with on a GPU (docs/benchmarks.md).

#include <cstdint>

#include "engine/backend/cuda/device_runtime.h"
#include "engine/expected.h"

namespace tern::engine::cuda {

// Copies a `bytes` buffer to another on the runtime's current device `repetitions` times (after
// one untimed copy) and returns bytes per second counting both the read and the write of every
// byte copied: 2 x bytes x repetitions over the wall time from the first issue to the end of the
// last. That is the convention of CUDA's bandwidthTest and of an HBM data sheet, where reads and
// writes share the one bandwidth. On the emulated device the copy is a host memmove, so the
// result is host memory's. An error when the buffers do not fit or a copy fails; `bytes` and
// `repetitions` must be > 0.
Expected<double> measure_device_copy_bandwidth(DeviceRuntime& runtime, std::uint64_t bytes,
                                               int repetitions);

}  // namespace tern::engine::cuda
