#pragma once

// The embedding gather, shared source: nvcc compiles it through embedding.cu, the host compiler
// against the SIMT emulator (docs/gpu.md) in tests/cuda_kernels/embedding_test.cpp.

#include <cstdint>

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/dequantize.cuh"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// One thread per output element: blockIdx.x is the token, blockIdx.y the chunk of blockDim.x
// elements of its row. Threads of a warp read neighbouring quants of the same blocks and write
// neighbouring floats.
template <TensorType kType>
__global__ void embedding_gather_kernel(const void* __restrict__ table, long long vocab, int hidden,
                                        const std::int32_t* __restrict__ token_ids,
                                        float* __restrict__ out) {
  const int e = static_cast<int>(blockIdx.y * blockDim.x + threadIdx.x);
  if (e >= hidden) return;
  const std::int32_t id = token_ids[blockIdx.x];
  float* out_row = out + static_cast<long long>(blockIdx.x) * hidden;
  if (id < 0 || id >= vocab) {
    out_row[e] = 0.0f;
    return;
  }
  const void* row = static_cast<const unsigned char*>(table) + id * weight_row_bytes<kType>(hidden);
  out_row[e] = dequantize_element<kType>(row, e);
}

TERN_CUDA_NAMESPACE_END
