#pragma once

// The row gather before the output norm (the last token of each chunk that wants logits), shared
// source: nvcc compiles it through gather_rows.cu, the host compiler against the SIMT emulator
// (docs/gpu.md) in tests/cuda_kernels/gather_rows_test.cpp.

#include <cstdint>

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// to[r][i] = from[row_index[r]][i], one thread per element: blockIdx.x is the output row,
// blockIdx.y the chunk of blockDim.x elements of it. A plain 32-bit copy, so the bits are the
// source's. An index outside [0, from_rows) reads nothing and writes a quiet NaN.
__global__ void gather_rows_kernel(const float* __restrict__ from, long long from_rows,
                                   long long from_stride,
                                   const std::int32_t* __restrict__ row_index,
                                   float* __restrict__ to, long long to_stride, int width) {
  const int i = static_cast<int>(blockIdx.y * blockDim.x + threadIdx.x);
  if (i >= width) return;
  const std::int32_t row = row_index[blockIdx.x];
  float* out = to + static_cast<long long>(blockIdx.x) * to_stride;
  out[i] = row >= 0 && row < from_rows ? from[row * from_stride + i] : __int_as_float(0x7fc00000);
}

TERN_CUDA_NAMESPACE_END
