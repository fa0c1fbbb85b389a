#pragma once

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

// out = silu(gate) * up and into += from over n floats. Pointers are device memory; each
// returns the launch status.
cudaError_t launch_silu_mul(const float* gate, const float* up, float* out, long long n,
                            cudaStream_t stream);
cudaError_t launch_add(float* into, const float* from, long long n, cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
