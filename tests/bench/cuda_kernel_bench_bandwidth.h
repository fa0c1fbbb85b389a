#pragma once

// tern's own probe of a device's memory bound: device-to-device copies of one large buffer
// (cudaMemcpyAsync), each timed between CUDA events (on the emulator: a host memmove, timed by
// the host's clock). GB/s counts the bytes read and the bytes written, as CUDA's bandwidthTest
// and HBM data sheets do, and as `tern bench` (engine/backend/cuda/device_copy_bandwidth.h).

#include <cstddef>
#include <string>

#include "kernels/cuda/cuda_api.h"

namespace tern::cuda_bench {

struct CopyBandwidth {
  double best_gbs = 0;  // from the fastest copy
  double mean_gbs = 0;
};

// Copies a `bytes` buffer `copies` times after two untimed copies and prints the record
// (kernel "bandwidth"), or its error record. False with `error` set when that fails.
bool measure_copy_bandwidth(std::size_t bytes, int copies, cudaStream_t stream,
                            CopyBandwidth& result, std::string& error);

}  // namespace tern::cuda_bench
