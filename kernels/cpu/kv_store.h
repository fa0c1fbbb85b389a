#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kv_type.h"

namespace tern::kernels {

// Shape of one layer's paged KV cache. A block holds block_size consecutive positions of one
// sequence. K of one block is laid out [n_kv_heads][block_size][head_dim], so one head's keys in a
// block are contiguous; V is laid out the same way in its own pool.
struct KvCacheLayout {
  KvType type;
  int block_size;
  int n_kv_heads;
  int head_dim;
};

std::size_t kv_type_bytes(KvType type);

// Bytes of one block of K (or, equally, of V) of one layer: block b of a pool starts at
// b * kv_block_bytes(layout).
std::size_t kv_block_bytes(const KvCacheLayout& layout);

// Writes token rows of k and v ([tokens][n_kv_heads * head_dim], rows k_stride / v_stride floats
// apart) into the pools at their positions: block block_table[position / block_size], slot
// position % block_size. k_pool and v_pool point at block 0 of the layer. With v_pool == nullptr
// only K is written (latent attention caches one row per token, which is its own value).
void store_kv(const float* k, std::int64_t k_stride, const float* v, std::int64_t v_stride,
              std::int64_t tokens, const std::int32_t* positions, const std::int32_t* block_table,
              const KvCacheLayout& layout, void* k_pool, void* v_pool);

// f32 to f16 of `count` values exactly as f32_to_f16 (kernels/cpu/half.h) converts each: the
// AVX-512 variant store_kv uses where the CPU has it, for tests and benchmarks.
void f32_to_f16_row_avx512(const float* source, std::int64_t count, std::uint16_t* out);

}  // namespace tern::kernels
