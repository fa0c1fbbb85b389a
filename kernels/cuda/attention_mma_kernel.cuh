#pragma once

// Paged attention on tensor cores for F16 and BF16 caches and head dims that are whole 16-value
// mma steps, decode and prefill alike, shared source (nvcc via paged_attention.cu, the host
// compiler against the SIMT emulator). FlashAttention-2's shape over the paged cache: a warp
// holds 16 query vectors ((row, head) pairs of one KV head), the block stages each 32-key tile of
// K and V into shared memory with 16-byte cp.async copies, S = Q Kᵀ and O += P V run on
// mma.m16n8k16, and the softmax is online from tile to tile, with the same 256-position
// partitions as paged_attention_kernel.cuh: decode hands each partition to
// paged_attention_merge_kernel, prefill folds them in the block with the same attention_fold.
//
// Precision: K and V are exact in the mma's 16-bit type, and the other operand is split into two
// halves of that type, hi = round(x) and lo = round(x - hi), each multiplied by its own mma into
// the same f32 accumulator: Q for the scores, P for the output. That keeps 22 bits of Q and P for
// F16 caches (16 for BF16) where one rounding would keep 11 (8), so the result stays within the
// CPU kernel's tolerance at twice the mma count.
//
// A vector's arithmetic depends only on itself: its q, the tiles at fixed absolute positions, its
// own mask. The mma's output row depends only on its A row; the row maximum and sum are reduced
// over the lane quad in a fixed order; the scale, the exponent's argument and the running sum
// are rounded by explicit intrinsics, so nvcc contracts nothing differently in the decode and
// prefill instantiations. A tile past a vector's keys (prefill's later rows in the same warp)
// leaves its state bit for bit as it was: its P is zero, its correction exactly 1. So a row's
// bits are the same through decode and prefill, alone or in a batch, in a chunk of any size.

#include <cstdint>

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/paged_attention_kernel.cuh"
#include "kernels/kv_type.h"
#include "kernels/simt/async_copy.h"
#include "kernels/simt/portable.h"
#include "kernels/simt/tensor_core.h"

TERN_CUDA_NAMESPACE_BEGIN

inline constexpr int kMmaAttentionVectors = 16;  // per warp: one m16 tile
inline constexpr int kMmaAttentionKeys = 32;     // keys per staged tile
inline constexpr int kMmaAttentionDecodeWarps = 1;
inline constexpr int kMmaAttentionPrefillWarps = 2;

// Whether the tensor-core kernel takes a cache: F16 or BF16, head dims of whole mma steps.
TERN_HOST_DEVICE constexpr bool attention_uses_mma(KvType type, int head_dim) {
  return (type == KvType::f16 || type == KvType::bf16) && head_dim % 16 == 0;
}

template <KvType kType>
__device__ __forceinline__ unsigned short round_to_kv(float value) {
  if constexpr (kType == KvType::bf16) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(value));
  } else {
    return __half_as_ushort(__float2half_rn(value));
  }
}

template <KvType kType>
__device__ __forceinline__ float widen_kv(unsigned short bits) {
  if constexpr (kType == KvType::bf16) {
    return __bfloat162float(__ushort_as_bfloat16(bits));
  } else {
    return __half2float(__ushort_as_half(bits));
  }
}

// One half of x split in two 16-bit values: hi = round(x), or with `low` lo = round(x - hi).
template <KvType kType>
__device__ __forceinline__ unsigned short split_half(float x, bool low) {
  const unsigned short hi = round_to_kv<kType>(x);
  return low ? round_to_kv<kType>(__fsub_rn(x, widen_kv<kType>(hi))) : hi;
}

// split_half of two values as one register, x0 in the low 16 bits.
template <KvType kType>
__device__ __forceinline__ std::uint32_t split_pair(float x0, float x1, bool low) {
  return static_cast<std::uint32_t>(split_half<kType>(x0, low)) |
         static_cast<std::uint32_t>(split_half<kType>(x1, low)) << 16;
}

// Blocks as paged_attention_kernel's, with kMmaAttentionVectors heads per pass and kWarps warps:
// grid (rows, kv_head + n_kv_heads * (pass + head_passes * partition), sequence).
// kOneSplitPerBlock: decode (query_starts null, partials for the merge); otherwise prefill.
template <int kHeadDim, KvType kType, int kWarps, bool kOneSplitPerBlock>
__global__ void __launch_bounds__(32 * kWarps, 1)
    attention_mma_kernel(const float* __restrict__ q, float* __restrict__ out,
                         const int* __restrict__ query_starts, const int* __restrict__ context_lens,
                         const int* __restrict__ block_tables, const void* __restrict__ k_pool,
                         const void* __restrict__ v_pool, float* __restrict__ partial_max,
                         float* __restrict__ partial_sum, float* __restrict__ partial_acc,
                         AttentionParams p) {
  static_assert(attention_uses_mma(kType, kHeadDim), "F16 or BF16, head dims of 16-value steps");
  constexpr MmaFloat kMma = kType == KvType::bf16 ? MmaFloat::bf16 : MmaFloat::f16;
  constexpr int kThreads = 32 * kWarps;
  constexpr int kVectors = kMmaAttentionVectors * kWarps;
  constexpr int kKeys = kMmaAttentionKeys;
  // Staged rows are kHeadDim halves and 16 bytes of padding: the 8 rows an ldmatrix matrix reads
  // fall in 8 different bank groups for every head dim here.
  constexpr int kStride = kHeadDim + 8;
  constexpr int kChunks = kHeadDim / 8;     // 16-byte chunks of a K or V row
  constexpr int kDimSteps = kHeadDim / 16;  // k steps of Q Kᵀ
  constexpr int kDimTiles = kHeadDim / 8;   // n8 tiles of O
  constexpr int kKeyTiles = kKeys / 8;      // n8 tiles of S
  constexpr int kTilesPerSplit = kAttentionSplit / kKeys;
  // Decode stages the next tile while it computes one (a single warp is latency-bound); prefill's
  // two warps fill the shared memory with one stage already at head dim 128.
  constexpr int kStages = kOneSplitPerBlock ? 2 : 1;
  TERN_SHARED_ALIGNED(unsigned short, q_hi, kVectors* kStride, 16);
  TERN_SHARED_ALIGNED(unsigned short, q_lo, kVectors* kStride, 16);
  TERN_SHARED_ALIGNED(unsigned short, k_tile, kStages* kKeys* kStride, 16);
  TERN_SHARED_ALIGNED(unsigned short, v_tile, kStages* kKeys* kStride, 16);

  const AttentionBlock block =
      attention_block(p, kOneSplitPerBlock ? nullptr : query_starts, context_lens,
                      kMmaAttentionVectors, kOneSplitPerBlock);
  if (!block.active) return;
  const int block_tiles = (block.block_keys + kKeys - 1) / kKeys;
  const int* block_table =
      block_tables + static_cast<long long>(block.sequence) * p.max_blocks_per_seq;
  const long long block_bytes = static_cast<long long>(p.n_kv_heads) * p.block_size * kHeadDim * 2;
  const long long head_bytes = static_cast<long long>(block.kv_head) * p.block_size * kHeadDim * 2;
  const auto chunk_offset = [&](int position, int chunk) {
    return static_cast<long long>(block_table[position / p.block_size]) * block_bytes + head_bytes +
           (static_cast<long long>(position % p.block_size) * kHeadDim + chunk * 8) * 2;
  };

  // Vector v: head first_head + v % heads of row first_row + v / heads. Its q, split in two.
  for (int i = threadIdx.x; i < kVectors * kHeadDim; i += kThreads) {
    const int v = i / kHeadDim, d = i % kHeadDim;
    float value = 0.0f;
    if (v < block.vectors) {
      const long long row = block.q_begin + block.first_row + v / block.heads;
      value = q[row * p.q_stride +
                static_cast<long long>(block.first_head + v % block.heads) * kHeadDim + d];
    }
    q_hi[v * kStride + d] = split_half<kType>(value, false);
    q_lo[v * kStride + d] = split_half<kType>(value, true);
  }

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int quad_row = lane / 4, quad_col = lane % 4;
  const int warp_vector = kMmaAttentionVectors * warp;
  const bool warp_works = warp_vector < block.vectors;  // the same for the whole warp
  // This lane's rows of the warp's tile: vectors warp_vector + quad_row + 8 h, h = 0, 1.
  int row_keys[2];
  TERN_ATTENTION_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int v = warp_vector + quad_row + 8 * h;
    row_keys[h] = v < block.vectors ? block.first_position + v / block.heads + 1 : 0;
  }
  const auto head_of = [&](int h) {
    return block.first_head + (warp_vector + quad_row + 8 * h) % block.heads;
  };
  const auto row_of = [&](int h) {
    return static_cast<long long>(block.q_begin + block.first_row +
                                  (warp_vector + quad_row + 8 * h) / block.heads);
  };

  float total_max[2] = {-INFINITY, -INFINITY};
  float total_sum[2] = {0.0f, 0.0f};
  MmaAccF32 total[kOneSplitPerBlock ? 1 : kDimTiles];
  if constexpr (!kOneSplitPerBlock) {
    TERN_ATTENTION_UNROLL
    for (int d = 0; d < kDimTiles; ++d) {
      TERN_ATTENTION_UNROLL
      for (int i = 0; i < 4; ++i) total[d][i] = 0.0f;
    }
  }

  for (int split = block.split_begin; split < block.split_end; ++split) {
    float running_max[2] = {-INFINITY, -INFINITY};
    float running_sum[2] = {0.0f, 0.0f};
    MmaAccF32 acc[kDimTiles];
    TERN_ATTENTION_UNROLL
    for (int d = 0; d < kDimTiles; ++d) {
      TERN_ATTENTION_UNROLL
      for (int i = 0; i < 4; ++i) acc[d][i] = 0.0f;
    }
    const int tile_end = min((split + 1) * kTilesPerSplit, block_tiles);
    // Tile `tile`'s K and V into its slot, as one group of copies; keys past the block's are
    // zeros, so that P = 0 times V adds nothing.
    const auto stage = [&](int tile) {
      const int tile_start = tile * kKeys;
      const int tile_keys = min(kKeys, block.block_keys - tile_start);
      const int slot = tile % kStages * kKeys * kStride;
      for (int c = threadIdx.x; c < kKeys * kChunks; c += kThreads) {
        const int key = c / kChunks, chunk = c % kChunks;
        const int at = slot + key * kStride + chunk * 8;
        if (key < tile_keys) {
          const long long offset = chunk_offset(tile_start + key, chunk);
          cp_async<16, AsyncCache::global_only>(k_tile, at,
                                                static_cast<const unsigned char*>(k_pool) + offset);
          cp_async<16, AsyncCache::global_only>(v_tile, at,
                                                static_cast<const unsigned char*>(v_pool) + offset);
        } else {
          TERN_ATTENTION_UNROLL
          for (int e = 0; e < 8; ++e) {
            k_tile[at + e] = 0;
            v_tile[at + e] = 0;
          }
        }
      }
      cp_async_commit_group();
    };
    __syncthreads();  // the previous partition's tiles are consumed (and, the first time, q staged)
    if constexpr (kStages == 2) stage(split * kTilesPerSplit);
    for (int tile = split * kTilesPerSplit; tile < tile_end; ++tile) {
      const int tile_start = tile * kKeys;
      if constexpr (kStages == 2) {
        // Into the slot the previous iteration read, behind its closing barrier.
        if (tile + 1 < tile_end) {
          stage(tile + 1);
        } else {
          cp_async_commit_group();  // an empty group, so that one wait fits every iteration
        }
        cp_async_wait_group<1>();  // this thread's copies of `tile` have landed
      } else {
        stage(tile);
        cp_async_wait_group<0>();
      }
      __syncthreads();  // and every thread's
      const int slot = tile % kStages * kKeys * kStride;
      if (warp_works) {
        // S = Q Kᵀ, each q as hi then lo; ldmatrix rows: lane l gives row l % 8 of matrix l / 8.
        MmaAccF32 s[kKeyTiles];
        TERN_ATTENTION_UNROLL
        for (int j = 0; j < kKeyTiles; ++j) {
          TERN_ATTENTION_UNROLL
          for (int i = 0; i < 4; ++i) s[j][i] = 0.0f;
        }
        TERN_ATTENTION_UNROLL
        for (int step = 0; step < kDimSteps; ++step) {
          const int a_at =
              (warp_vector + lane % 8 + 8 * (lane / 8 % 2)) * kStride + 16 * step + 8 * (lane / 16);
          MmaA16 a_hi, a_lo;
          ldmatrix<4>(a_hi, q_hi, a_at);
          ldmatrix<4>(a_lo, q_lo, a_at);
          TERN_ATTENTION_UNROLL
          for (int j = 0; j < kKeyTiles; ++j) {
            MmaB16 b;
            ldmatrix<2>(b, k_tile,
                        slot + (8 * j + lane % 8) * kStride + 16 * step + 8 * (lane / 8 % 2));
            mma_m16n8k16<kMma>(s[j], a_hi, b, s[j]);
            mma_m16n8k16<kMma>(s[j], a_lo, b, s[j]);
          }
        }

        // Element i of s[j]: row h = i / 2 of this lane, key tile_start + 8 j + 2 quad_col + i % 2.
        float tile_max[2] = {-INFINITY, -INFINITY};
        TERN_ATTENTION_UNROLL
        for (int j = 0; j < kKeyTiles; ++j) {
          TERN_ATTENTION_UNROLL
          for (int i = 0; i < 4; ++i) {
            const int key = tile_start + 8 * j + 2 * quad_col + i % 2;
            s[j][i] = key < row_keys[i / 2] ? __fmul_rn(s[j][i], p.scale) : -INFINITY;
            tile_max[i / 2] = fmaxf(tile_max[i / 2], s[j][i]);
          }
        }
        float correction[2];
        float base[2];
        TERN_ATTENTION_UNROLL
        for (int h = 0; h < 2; ++h) {
          tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 1));
          tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 2));
          const float new_max = fmaxf(running_max[h], tile_max[h]);
          correction[h] =
              running_max[h] == -INFINITY ? 0.0f : expf(__fsub_rn(running_max[h], new_max));
          base[h] = new_max == -INFINITY ? 0.0f : new_max;
          running_max[h] = new_max;
        }
        float tile_sum[2] = {0.0f, 0.0f};
        TERN_ATTENTION_UNROLL
        for (int j = 0; j < kKeyTiles; ++j) {
          TERN_ATTENTION_UNROLL
          for (int i = 0; i < 4; ++i) {
            s[j][i] = expf(__fsub_rn(s[j][i], base[i / 2]));
            tile_sum[i / 2] += s[j][i];
          }
        }
        TERN_ATTENTION_UNROLL
        for (int h = 0; h < 2; ++h) {
          tile_sum[h] += __shfl_xor_sync(0xffffffffu, tile_sum[h], 1);
          tile_sum[h] += __shfl_xor_sync(0xffffffffu, tile_sum[h], 2);
          running_sum[h] = __fmaf_rn(running_sum[h], correction[h], tile_sum[h]);
        }
        TERN_ATTENTION_UNROLL
        for (int d = 0; d < kDimTiles; ++d) {
          TERN_ATTENTION_UNROLL
          for (int i = 0; i < 4; ++i) acc[d][i] = __fmul_rn(acc[d][i], correction[i / 2]);
        }

        // O += P V, each p as hi then lo. S's n8 tiles 2 k and 2 k + 1 are the A fragment of keys
        // 16 k .. 16 k + 15; V comes transposed: register m of lane l holds keys 16 k + 8 m +
        // 2 (l % 4) and + 1 at dim 8 d + l / 4, the B fragment.
        TERN_ATTENTION_UNROLL
        for (int k = 0; k < kKeys / 16; ++k) {
          MmaA16 p_hi, p_lo;
          TERN_ATTENTION_UNROLL
          for (int r = 0; r < 4; ++r) {
            const MmaAccF32& part = s[2 * k + r / 2];
            p_hi[r] = split_pair<kType>(part[2 * (r % 2)], part[2 * (r % 2) + 1], false);
            p_lo[r] = split_pair<kType>(part[2 * (r % 2)], part[2 * (r % 2) + 1], true);
          }
          TERN_ATTENTION_UNROLL
          for (int d = 0; d < kDimTiles; ++d) {
            MmaB16 b;
            ldmatrix<2, true>(b, v_tile,
                              slot + (16 * k + 8 * (lane / 8 % 2) + lane % 8) * kStride + 8 * d);
            mma_m16n8k16<kMma>(acc[d], p_hi, b, acc[d]);
            mma_m16n8k16<kMma>(acc[d], p_lo, b, acc[d]);
          }
        }
      }
      __syncthreads();  // the slot is consumed before a later stage() copies over it
    }
    if (!warp_works) continue;

    // The partition is done: hand it to the merge (decode) or fold it into the total (prefill).
    // Element i of acc[d]: row h = i / 2, dim 8 d + 2 quad_col + i % 2.
    const int split_start = split * kAttentionSplit;
    TERN_ATTENTION_UNROLL
    for (int h = 0; h < 2; ++h) {
      if (row_keys[h] <= split_start) continue;
      if constexpr (kOneSplitPerBlock) {
        const long long slot =
            (static_cast<long long>(block.sequence) * p.n_heads + head_of(h)) * p.max_splits +
            split;
        const bool partial = row_keys[h] > kAttentionSplit;
        if (partial && quad_col == 0) {
          partial_max[slot] = running_max[h];
          partial_sum[slot] = running_sum[h];
        }
        TERN_ATTENTION_UNROLL
        for (int d = 0; d < kDimTiles; ++d) {
          TERN_ATTENTION_UNROLL
          for (int e = 0; e < 2; ++e) {
            const int dim = 8 * d + 2 * quad_col + e;
            const float value = acc[d][2 * h + e];
            if (partial) {
              partial_acc[slot * kHeadDim + dim] = value;
            } else {
              out[row_of(h) * p.out_stride + static_cast<long long>(head_of(h)) * kHeadDim + dim] =
                  value * (1.0f / running_sum[h]);
            }
          }
        }
      } else {
        const AttentionFoldWeights weights = attention_fold_weights(total_max[h], running_max[h]);
        total_sum[h] = attention_fold(total_sum[h], running_sum[h], weights);
        total_max[h] = weights.max;
        TERN_ATTENTION_UNROLL
        for (int d = 0; d < kDimTiles; ++d) {
          TERN_ATTENTION_UNROLL
          for (int e = 0; e < 2; ++e)
            total[d][2 * h + e] = attention_fold(total[d][2 * h + e], acc[d][2 * h + e], weights);
        }
      }
    }
  }
  cp_async_wait_group<0>();

  if constexpr (!kOneSplitPerBlock) {
    if (!warp_works) return;
    TERN_ATTENTION_UNROLL
    for (int h = 0; h < 2; ++h) {
      if (row_keys[h] == 0) continue;  // a vector past the block's
      TERN_ATTENTION_UNROLL
      for (int d = 0; d < kDimTiles; ++d) {
        TERN_ATTENTION_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int dim = 8 * d + 2 * quad_col + e;
          out[row_of(h) * p.out_stride + static_cast<long long>(head_of(h)) * kHeadDim + dim] =
              total[d][2 * h + e] * (1.0f / total_sum[h]);
        }
      }
    }
  }
}

TERN_CUDA_NAMESPACE_END
