#pragma once

// The local half of tern's deterministic all-reduce (docs/gpu.md, "Tensor parallelism:
// communication"), shared source: nvcc compiles it through sum_ranks.cu, the host compiler
// against the SIMT emulator in tests/cuda_kernels/sum_ranks_test.cpp.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// out[i] = ((g[0][i] + g[1][i]) + g[2][i]) + ..., g[r] = gathered + r * count: every element's
// sum in rank order, one thread per element at a time (a grid-stride loop, so any grid covers
// any count). The order is fixed by the ranks alone, never by the grid or the element, so every
// rank that sums the same gathered data gets the same bits.
__global__ void sum_ranks_kernel(const float* __restrict__ gathered, int ranks, long long count,
                                 float* __restrict__ out) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    float sum = gathered[i];
    for (int r = 1; r < ranks; ++r) sum += gathered[static_cast<long long>(r) * count + i];
    out[i] = sum;
  }
}

TERN_CUDA_NAMESPACE_END
