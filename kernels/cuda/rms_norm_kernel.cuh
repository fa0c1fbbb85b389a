#pragma once

// The RMSNorm kernel, shared source: nvcc compiles it through rms_norm.cu, the host compiler
// against the SIMT emulator (docs/gpu.md) in tests/unit/simt/rms_norm_emulated_test.cpp.

#include "kernels/simt/portable.h"

namespace tern::kernels::cuda {

// One block of kThreads (a multiple of 32) per row.
template <int kThreads>
__global__ void rms_norm_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                float* __restrict__ y, int cols, float eps) {
  const float* row_in = x + static_cast<long long>(blockIdx.x) * cols;
  float* row_out = y + static_cast<long long>(blockIdx.x) * cols;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < cols; i += kThreads) sum += row_in[i] * row_in[i];
  // Fixed reduction tree: the result does not depend on which other rows are in the launch.
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  TERN_SHARED(float, warp_sums, kThreads / 32);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    float total = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
      total += __shfl_xor_sync(0xffffffffu, total, offset);
    if (threadIdx.x == 0) warp_sums[0] = total;
  }
  __syncthreads();
  const float scale = rsqrtf(warp_sums[0] / static_cast<float>(cols) + eps);
  for (int i = threadIdx.x; i < cols; i += kThreads) row_out[i] = row_in[i] * scale * weight[i];
}

}  // namespace tern::kernels::cuda
