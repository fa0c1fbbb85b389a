#pragma once

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

// The RMSNorm launchers: y = x / sqrt(mean(x^2) + eps) * weight per row. Pointers are device
// memory. Each returns cudaErrorInvalidValue without launching when a shape is out of range (a
// negative count, a width < 1, a null pointer), cudaSuccess for no rows, else the launch status.
// A row's bits depend only on that row, never on how many rows the launch has.

// y[r, :] = rms_norm(x[r, :]) * weight[:], one block per row of cols floats, contiguous.
cudaError_t launch_rms_norm(const float* x, const float* weight, float* y, int rows, int cols,
                            float eps, cudaStream_t stream);

// The residual add fused with the norm after it (CpuBatchOps::rms_norm with a residual):
// residual[r, :] += delta[r, :], then y[r, :] = rms_norm(residual[r, :]) * weight[:]. Rows are
// contiguous; y may alias delta, not residual. One block per row.
cudaError_t launch_rms_norm_residual(float* residual, const float* delta, const float* weight,
                                     float* y, int rows, int cols, float eps, cudaStream_t stream);

// Per-head RMSNorm (Qwen3's q_norm and k_norm): each of the n_heads heads of head_dim floats of
// each of `tokens` rows (row_stride floats apart, in x and in y) normed on its own with the one
// weight vector of head_dim. y may be x (in place, as the CPU backend runs it). One warp per head.
cudaError_t launch_rms_norm_per_head(const float* x, const float* weight, float* y,
                                     long long tokens, long long row_stride, int n_heads,
                                     int head_dim, float eps, cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
