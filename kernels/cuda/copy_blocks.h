#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/launch_types.h"

TERN_CUDA_NAMESPACE_BEGIN

// For every pair and every layer, copies block src of that layer's K pool and of its V pool to
// block dst, block b of a pool being the block_bytes bytes at b * block_bytes (kv_store.h:
// block_bytes = kv_block_bytes(layout)). k_pools and v_pools are device arrays of `layers` device
// pointers to block 0 of each layer's pools, set up once with the cache: one launch then copies
// every layer, where a launch per layer would cost 2 * layers launch overheads for a few KiB each.
// pairs is host memory, so the launcher checks it: it returns cudaErrorInvalidValue without
// launching anything when layers, blocks_per_pool or count is negative, pairs is null with
// count > 0, an index is outside [0, blocks_per_pool), a pair has src == dst, or a block is the
// dst of two pairs or the dst of one and the src of another (the copies would then depend on
// their order). Copies 16 bytes per access when block_bytes and the pools allow it.
cudaError_t launch_copy_blocks(void* const* k_pools, void* const* v_pools, int layers,
                               std::size_t block_bytes, int blocks_per_pool, const BlockCopy* pairs,
                               int count, cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
