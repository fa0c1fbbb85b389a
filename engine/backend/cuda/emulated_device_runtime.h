#pragma once

// The emulated device (`backend: cuda-emulated`): the DeviceRuntime over tern's SIMT emulator,
// on which the CUDA backend's host code, its kernels and its graphs run in CI without a GPU.
// - devices: EmulatedDeviceOptions::devices of EmulatedDeviceOptions::memory_bytes each; an
//   allocation over what is free fails as cudaMalloc would, naming the sizes.
// - device memory is host memory tagged with its device, registered with the emulator so that a
//   kernel handed anything else fails at launch.
// - streams and events are in order: work runs on the calling thread when it is issued.
// - capture records kernel launches (their arguments frozen as they were), copies and fills,
//   and rejects what CUDA rejects during capture: allocation, freeing and host synchronisation
//   are errors naming the call. Capture is per OS thread: what the capturing thread issues is
//   recorded, whichever stream it names.
// - host work (enqueue_host) runs when issued, or is recorded and run at each replay.
// - thread-safe: each OS thread has its own current device and capture, so N threads can each
//   drive their own device, streams and graphs at once (tensor parallelism); the runtime's tables
//   are under a mutex that is never held while work runs.

#include <memory>

#include "engine/backend/backend_spec.h"
#include "engine/backend/cuda/device_runtime.h"

namespace tern::engine::cuda {

std::unique_ptr<DeviceRuntime> make_emulated_device_runtime(const EmulatedDeviceOptions& options);

}  // namespace tern::engine::cuda
