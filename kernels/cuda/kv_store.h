#pragma once

#include <cstdint>

#include "kernels/cpu/kv_store.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

// store_kv of kernels/cpu/kv_store.h on the device, addressed by slot instead of by position and
// block table: token t's rows of k and v ([tokens][n_kv_heads * head_dim], rows k_stride /
// v_stride floats apart) go to slot slots[t] = block * block_size + offset of both pools, in the
// layout's element type (f16 and bf16 rounded to nearest even: the CPU kernel's bits). A slot of
// -1 marks a padded row and is skipped; so is any slot outside the pools' num_blocks blocks.
// k_pool and v_pool point at block 0 of the layer. Pointers are device memory.
// Returns cudaErrorInvalidValue without launching when a shape is out of range (tokens < 0,
// a layout size < 1, n_kv_heads over 65535, num_blocks < 0, a stride below n_kv_heads * head_dim, a
// null pointer), cudaSuccess for no tokens, else the launch status.
cudaError_t launch_store_kv(const float* k, long long k_stride, const float* v, long long v_stride,
                            long long tokens, const std::int32_t* slots,
                            const KvCacheLayout& layout, std::int32_t num_blocks, void* k_pool,
                            void* v_pool, cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
