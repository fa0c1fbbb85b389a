#pragma once

#include "kernels/cuda/cuda_api.h"

namespace tern::kernels::cuda {

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight[:], one block per row.
// Pointers are device memory; returns the launch status.
cudaError_t launch_rms_norm(const float* x, const float* weight, float* y, int rows, int cols,
                            float eps, cudaStream_t stream);

}  // namespace tern::kernels::cuda
