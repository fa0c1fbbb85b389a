#pragma once

// The DeviceRuntime over the CUDA runtime (cudart, never the driver API): `backend: cuda` on a
// GPU. Its kernels are nvcc's (kernels::cuda::nvcc_kernels()).
// - every failed call is an Error naming the call and CUDA's error name and text; an allocation
//   that does not fit names what it was for, the size and the memory free.
// - streams are non-blocking, events carry no timing.
// - capture is per OS thread (cudaStreamCaptureModeThreadLocal). What CUDA refuses on a capturing
//   thread (cudaMalloc, cudaHostAlloc, cudaStreamSynchronize, a second capture) is refused here
//   before CUDA sees it, so the capture in progress stays valid; a release during capture is
//   held back until the capture ends. launch_graph replays the instantiated graph.
// - enqueue_host is cudaLaunchHostFunc: the work runs on a CUDA thread, must not call CUDA, and
//   its first failure is returned by the next synchronize; work captured into a graph is kept by
//   the runtime (a replay in flight may still run it after destroy_graph).
//
// Declared in every build; in a build without CUDA make_cuda_device_runtime returns an error
// (cuda_device_runtime_factory.cpp).

#include <memory>

#include "engine/backend/cuda/device_runtime.h"
#include "engine/expected.h"

namespace tern::engine::cuda {

// The runtime on `device`, made current on the calling thread. Without a driver or a device, or
// with no such device, an error naming CUDA's reason; never aborts.
Expected<std::unique_ptr<DeviceRuntime>> make_cuda_device_runtime(int device);

}  // namespace tern::engine::cuda
