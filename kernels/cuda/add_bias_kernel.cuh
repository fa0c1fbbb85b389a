#pragma once

// The bias add after the Q/K/V projections (Qwen2's bq, bk, bv), shared source: nvcc compiles it
// through add_bias.cu, the host compiler against the SIMT emulator (docs/gpu.md) in
// tests/cuda_kernels/add_bias_test.cpp.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// rows[t][i] += bias[i], one thread per element: blockIdx.x is the row, blockIdx.y the chunk of
// blockDim.x elements of it. One float add per element, as CpuBatchOps::add_bias, so the bits are
// the CPU's.
__global__ void add_bias_kernel(float* __restrict__ rows, long long row_stride,
                                const float* __restrict__ bias, int width) {
  const int i = static_cast<int>(blockIdx.y * blockDim.x + threadIdx.x);
  if (i >= width) return;
  rows[static_cast<long long>(blockIdx.x) * row_stride + i] += bias[i];
}

TERN_CUDA_NAMESPACE_END
