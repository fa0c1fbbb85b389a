#pragma once

// The paged KV cache's block copy (copy-on-write), shared source: nvcc compiles it through
// copy_blocks.cu, the host compiler against the SIMT emulator (docs/gpu.md) in
// tests/cuda_kernels/copy_blocks_test.cpp.

#include <cstdint>

#include "kernels/cuda/copy_blocks.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// The pairs of one launch, passed by value as a kernel argument.
struct BlockCopyBatch {
  BlockCopy pairs[kMaxBlockCopiesPerLaunch];
};

// blockIdx.y is the pair, blockIdx.z / 2 the layer and blockIdx.z % 2 the pool (K, V); the
// blockIdx.x blocks of kThreads threads stride over the block's bytes, 16 at a time when both
// ends and the size are 16-byte aligned, else one at a time.
template <int kThreads>
__global__ void copy_blocks_kernel(void* const* __restrict__ k_pools,
                                   void* const* __restrict__ v_pools,
                                   unsigned long long block_bytes, const BlockCopyBatch batch) {
  const BlockCopy pair = batch.pairs[blockIdx.y];
  const unsigned layer = blockIdx.z / 2;
  unsigned char* pool =
      static_cast<unsigned char*>(blockIdx.z % 2 == 0 ? k_pools[layer] : v_pools[layer]);
  const unsigned char* src = pool + static_cast<unsigned long long>(pair.src) * block_bytes;
  unsigned char* dst = pool + static_cast<unsigned long long>(pair.dst) * block_bytes;
  const unsigned long long first =
      static_cast<unsigned long long>(blockIdx.x) * kThreads + threadIdx.x;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * kThreads;
  const auto alignment = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(src) |
                                                         reinterpret_cast<std::uintptr_t>(dst)) |
                         block_bytes;
  if (alignment % 16 == 0) {
    for (unsigned long long i = first; i < block_bytes / 16; i += stride)
      store_aligned(dst + 16 * i, load_aligned<int4>(src + 16 * i));
  } else {
    for (unsigned long long i = first; i < block_bytes; i += stride) dst[i] = src[i];
  }
}

TERN_CUDA_NAMESPACE_END
