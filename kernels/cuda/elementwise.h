#pragma once

#include "kernels/cuda/cuda_api.h"

namespace tern::kernels::cuda {

// out = silu(gate) * up and into += from over n floats. Pointers are device memory; each
// returns the launch status.
cudaError_t launch_silu_mul(const float* gate, const float* up, float* out, long long n,
                            cudaStream_t stream);
cudaError_t launch_add(float* into, const float* from, long long n, cudaStream_t stream);

}  // namespace tern::kernels::cuda
