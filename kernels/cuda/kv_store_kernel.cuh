#pragma once

// The paged KV cache store, shared source: nvcc compiles it through kv_store.cu, the host compiler
// against the SIMT emulator (docs/gpu.md).

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// The cache's element types; half and bfloat16 round to nearest even, as the CPU's store_kv.
__device__ __forceinline__ void store_element(float* out, float value) {
  *out = value;
}
__device__ __forceinline__ void store_element(__half* out, float value) {
  *out = __float2half_rn(value);
}
__device__ __forceinline__ void store_element(__nv_bfloat16* out, float value) {
  *out = __float2bfloat16_rn(value);
}

// One block per (token, kv head), any block size: writes the head's head_dim floats of the
// token's k and v rows into its slot (block slot / block_size, row slot % block_size) of both
// pools, laid out as KvCacheLayout says: a block is [n_kv_heads][block_size][head_dim], so
// consecutive threads write consecutive, contiguous dimensions. A slot below 0 (a padded row) or
// at or past `slots_in_pool` is skipped, so nothing is written outside the pools.
template <class T>
__global__ void store_kv_kernel(const float* __restrict__ k, long long k_stride,
                                const float* __restrict__ v, long long v_stride,
                                const int* __restrict__ slots, long long slots_in_pool,
                                int block_size, int head_dim, T* __restrict__ k_pool,
                                T* __restrict__ v_pool) {
  const long long token = blockIdx.x;
  const long long head = blockIdx.y;
  const long long slot = slots[token];
  if (slot < 0 || slot >= slots_in_pool) return;
  const long long head_elements = static_cast<long long>(block_size) * head_dim;
  const long long at = ((slot / block_size) * gridDim.y + head) * head_elements +
                       (slot % block_size) * static_cast<long long>(head_dim);
  const float* k_head = k + token * k_stride + head * head_dim;
  const float* v_head = v + token * v_stride + head * head_dim;
  for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
    store_element(k_pool + at + i, k_head[i]);
    store_element(v_pool + at + i, v_head[i]);
  }
}

TERN_CUDA_NAMESPACE_END
