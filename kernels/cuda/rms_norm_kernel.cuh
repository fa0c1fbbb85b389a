#pragma once

// The RMSNorm kernels, shared source: nvcc compiles them through rms_norm.cu, the host compiler
// against the SIMT emulator (docs/gpu.md).

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// The sum of one value per thread over a block of kThreads (a multiple of 32), the same in every
// thread. Fixed reduction tree: the result does not depend on which other rows are in the launch.
// Called once per kernel (its shared array is not reused).
template <int kThreads>
__device__ __forceinline__ float block_sum(float sum) {
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
  return warp_sums[0];
}

// One block of kThreads (a multiple of 32) per row. y may be x: the output norm runs in place
// (each row is read in full before it is written).
template <int kThreads>
__global__ void rms_norm_kernel(const float* x, const float* __restrict__ weight, float* y,
                                int cols, float eps) {
  const float* row_in = x + static_cast<long long>(blockIdx.x) * cols;
  float* row_out = y + static_cast<long long>(blockIdx.x) * cols;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < cols; i += kThreads) sum += row_in[i] * row_in[i];
  const float scale = rsqrtf(block_sum<kThreads>(sum) / static_cast<float>(cols) + eps);
  for (int i = threadIdx.x; i < cols; i += kThreads) row_out[i] = row_in[i] * scale * weight[i];
}

// The residual stream's add fused with the norm that follows it, one block of kThreads per row:
// residual += delta, then y = rms_norm(residual) * weight. Thread t reads and writes the same
// columns in both passes, so y may alias delta (never residual).
template <int kThreads>
__global__ void rms_norm_residual_kernel(float* __restrict__ residual, const float* delta,
                                         const float* __restrict__ weight, float* y, int cols,
                                         float eps) {
  const long long row = blockIdx.x;
  float* row_residual = residual + row * cols;
  const float* row_delta = delta + row * cols;
  float* row_out = y + row * cols;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < cols; i += kThreads) {
    const float value = row_residual[i] + row_delta[i];
    row_residual[i] = value;
    sum += value * value;
  }
  const float scale = rsqrtf(block_sum<kThreads>(sum) / static_cast<float>(cols) + eps);
  for (int i = threadIdx.x; i < cols; i += kThreads)
    row_out[i] = row_residual[i] * scale * weight[i];
}

// RMSNorm of each head on its own (Qwen3's q and k norms): one warp per head of head_dim floats,
// kThreads / 32 heads per block, heads numbered token * n_heads + head across the launch. Row
// `token` starts row_stride floats after the previous one in x and in y; y may be x (in place):
// each lane reads and writes the same dimensions.
template <int kThreads>
__global__ void rms_norm_per_head_kernel(const float* x, const float* __restrict__ weight, float* y,
                                         long long row_stride, long long heads, int n_heads,
                                         int head_dim, float eps) {
  const long long head_index =
      static_cast<long long>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  // A whole warp leaves together, and no block-wide barrier follows.
  if (head_index >= heads) return;
  const long long offset =
      head_index / n_heads * row_stride + head_index % n_heads * static_cast<long long>(head_dim);
  const float* head_in = x + offset;
  float* head_out = y + offset;
  const int lane = threadIdx.x % 32;
  float sum = 0.0f;
  for (int i = lane; i < head_dim; i += 32) sum += head_in[i] * head_in[i];
  for (int step = 16; step > 0; step /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, step);
  const float scale = rsqrtf(sum / static_cast<float>(head_dim) + eps);
  for (int i = lane; i < head_dim; i += 32) head_out[i] = head_in[i] * scale * weight[i];
}

TERN_CUDA_NAMESPACE_END
