#pragma once

// Paged attention over the KV cache (layout of kernels/cpu/kv_store.h), shared source: nvcc
// compiles it through paged_attention.cu, the host compiler against the SIMT emulator.
//
// Keys are visited in 64-position tiles aligned to absolute positions, with an online softmax
// carried from tile to tile, exactly as the CPU kernel (kernels/cpu/attention_tiles.h) does. The
// tiles are grouped into fixed partitions of kAttentionSplit positions (split-K): each partition's
// softmax starts afresh and the partitions of a row are folded in order 0, 1, 2, ... . Decode puts
// one partition per block and folds them in paged_attention_merge_kernel; prefill folds them in
// the block as it walks the keys. Both run the same arithmetic per (query row, head), which depends
// only on that row's position: a row's bits are the same whether it comes through decode or
// prefill, alone or in a batch, in a chunk of any size.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/kv_type.h"
#include "kernels/simt/portable.h"

// Loops over per-thread register arrays must unroll under nvcc, or the arrays go to local memory.
#if defined(__CUDACC__)
#define TERN_ATTENTION_UNROLL _Pragma("unroll")
#else
#define TERN_ATTENTION_UNROLL
#endif

TERN_CUDA_NAMESPACE_BEGIN

inline constexpr int kAttentionTile = 64;  // kernels::kAttentionKeyTile of the CPU kernel
inline constexpr int kAttentionSplitTiles = 4;
inline constexpr int kAttentionSplit = kAttentionTile * kAttentionSplitTiles;
inline constexpr int kAttentionThreads = 128;
// Query vectors, (row, head) pairs of one KV head, one block works on: the GQA group of one row
// in decode, as many rows as fit in prefill. Each K/V tile is read once for all of them. A larger
// GQA group is split into passes of this many heads, each its own block (as the CPU kernel's
// kAttentionHeadsPerPass).
inline constexpr int kAttentionVectors = 8;
inline constexpr int kAttentionMergeThreads = 128;

// Sizes both kernels take by value.
struct AttentionParams {
  int n_heads;
  int n_kv_heads;
  int head_dim;
  int block_size;
  int max_blocks_per_seq;  // row stride of block_tables
  long long q_stride;      // floats between query rows
  long long out_stride;    // floats between output rows
  float scale;
  int head_passes;     // blocks that share a KV head's query heads, kAttentionVectors each
  int rows_per_block;  // query rows of one sequence per block
  int max_splits;      // decode: partitions per (sequence, head) in the workspace
};

// Folding a partition with maximum split_max into a running total with maximum total_max: the new
// maximum and the factors that rescale the total and the partition to it. Decode's merge and
// prefill's in-block fold use this and attention_fold, so their bits agree.
struct AttentionFoldWeights {
  float max;
  float old_weight;
  float new_weight;
};

__device__ __forceinline__ AttentionFoldWeights attention_fold_weights(float total_max,
                                                                       float split_max) {
  const float max = fmaxf(total_max, split_max);
  return {max, total_max == -INFINITY ? 0.0f : expf(total_max - max), expf(split_max - max)};
}

// total * old_weight + part * new_weight with one fixed rounding sequence: an explicit fma, so
// nvcc cannot contract the two products differently in the two kernels.
__device__ __forceinline__ float attention_fold(float total, float part,
                                                AttentionFoldWeights weights) {
  return __fmaf_rn(part, weights.new_weight, total * weights.old_weight);
}

// The longest context a launch can hold: its block tables' reach and, in decode, the workspace's
// partitions. A sequence past it (context_lens are device data the launcher cannot check) is
// skipped and its rows left unwritten, rather than read or written out of bounds.
__device__ __forceinline__ long long attention_max_context(const AttentionParams& p,
                                                           bool one_split_per_block) {
  const long long reach = static_cast<long long>(p.max_blocks_per_seq) * p.block_size;
  const long long partitions = static_cast<long long>(p.max_splits) * kAttentionSplit;
  return one_split_per_block && partitions < reach ? partitions : reach;
}

// What one thread block of either attention kernel (this one, attention_mma_kernel.cuh) works
// on, from its grid position: blockIdx.x picks rows, blockIdx.y = kv_head + n_kv_heads * (pass +
// head_passes * partition), blockIdx.z is the sequence; a pass takes `pass_heads` query heads.
// query_starts null: one query row per sequence, row `sequence` of q (decode). `active` is false
// for a block with nothing to do: no rows here, a context past the launch's bounds (its rows are
// left unwritten), or a partition past its keys.
struct AttentionBlock {
  bool active;
  int sequence, kv_head, first_head, heads;
  int q_begin, first_row, rows, vectors;
  int first_position;  // of the block's first row
  int block_keys;      // keys the block's last row attends to
  int split_begin, split_end;
};

__device__ __forceinline__ AttentionBlock attention_block(const AttentionParams& p,
                                                          const int* query_starts,
                                                          const int* context_lens, int pass_heads,
                                                          bool one_split_per_block) {
  AttentionBlock b{};
  b.sequence = blockIdx.z;
  const int group = p.n_heads / p.n_kv_heads;
  b.kv_head = blockIdx.y % p.n_kv_heads;
  const int pass = blockIdx.y / p.n_kv_heads % p.head_passes;
  b.first_head = b.kv_head * group + pass * pass_heads;
  b.heads = min(pass_heads, group - pass * pass_heads);
  b.q_begin = query_starts != nullptr ? query_starts[b.sequence] : b.sequence;
  const int q_len = query_starts != nullptr ? query_starts[b.sequence + 1] - b.q_begin : 1;
  const int context = context_lens[b.sequence];
  b.first_row = blockIdx.x * p.rows_per_block;
  if (q_len <= 0 || q_len > context || b.first_row >= q_len) return b;
  if (context > attention_max_context(p, one_split_per_block)) return b;
  b.rows = min(p.rows_per_block, q_len - b.first_row);
  b.vectors = b.rows * b.heads;
  b.first_position = context - q_len + b.first_row;
  b.block_keys = b.first_position + b.rows;
  const int block_splits = (b.block_keys + kAttentionSplit - 1) / kAttentionSplit;
  b.split_begin = 0;
  b.split_end = block_splits;
  if (one_split_per_block) {
    b.split_begin = blockIdx.y / p.n_kv_heads / p.head_passes;
    if (b.split_begin >= block_splits) return b;
    b.split_end = b.split_begin + 1;
  }
  b.active = true;
  return b;
}

// Element i of a 16-byte chunk of a K or V row, widened to float.
template <KvType kType>
__device__ __forceinline__ float kv_chunk_element(uint4 chunk, int i) {
  const unsigned words[4] = {chunk.x, chunk.y, chunk.z, chunk.w};
  if constexpr (kType == KvType::f32) {
    return __uint_as_float(words[i]);
  } else {
    const auto bits = static_cast<unsigned short>((words[i / 2] >> (16 * (i % 2))) & 0xffffu);
    if constexpr (kType == KvType::f16) return __half2float(__ushort_as_half(bits));
    return __bfloat162float(__ushort_as_bfloat16(bits));
  }
}

// Blocks per SM the register budget is set for: five (20 warps to keep loads in flight) is what
// the shared memory of the largest head dim allows on sm_90; f32 rows need more registers to
// stage, and spill at four (F32 caches run here only in the kernel tests: the CUDA backend
// refuses them). (With the block size alone ptxas aimed at 128 registers and spilled.)
template <KvType kType>
inline constexpr int kAttentionBlocksPerSm = kType == KvType::f32 ? 3 : 5;

// One block of kAttentionThreads per (query rows, KV head and head pass, sequence): blockIdx.x
// picks rows, blockIdx.y = kv_head + n_kv_heads * (pass + head_passes * partition), blockIdx.z is
// the sequence. query_starts null: one query row per sequence, row `sequence` of q (decode).
// Otherwise sequence s has rows query_starts[s] .. query_starts[s + 1] - 1, rows_per_block of them
// per block. The rows sit at the last positions of the sequence's context_lens[s] keys, all in the
// cache. partial_acc null: the block walks all of its rows' keys and writes out (partition is 0).
// Otherwise it walks one partition; a row with one partition writes out, a longer one its
// partition's maximum, sum and unnormalized output for paged_attention_merge_kernel.
template <int kHeadDim, KvType kType>
__global__ void __launch_bounds__(kAttentionThreads, kAttentionBlocksPerSm<kType>)
    paged_attention_kernel(const float* __restrict__ q, float* __restrict__ out,
                           const int* __restrict__ query_starts,
                           const int* __restrict__ context_lens,
                           const int* __restrict__ block_tables, const void* __restrict__ k_pool,
                           const void* __restrict__ v_pool, float* __restrict__ partial_max,
                           float* __restrict__ partial_sum, float* __restrict__ partial_acc,
                           AttentionParams p) {
  constexpr int kElementBytes = kType == KvType::f32 ? 4 : 2;
  constexpr int kChunkElements = 16 / kElementBytes;
  constexpr int kChunksPerRow = kHeadDim / kChunkElements;
  // Rows of a staged tile one float apart more than head_dim: the lanes of a warp, which read
  // consecutive keys at one dimension, hit different banks.
  constexpr int kRowStride = kHeadDim + 1;
  constexpr int kPairsPerThread = kAttentionVectors * kAttentionTile / kAttentionThreads;
  constexpr int kOutputsPerThread =
      (kAttentionVectors * kHeadDim + kAttentionThreads - 1) / kAttentionThreads;
  static_assert(kHeadDim % kChunkElements == 0, "K/V rows are read in 16-byte chunks");
  static_assert(kAttentionThreads % kAttentionTile == 0, "a thread's score pairs share one key");

  TERN_SHARED(float, kv_tile, (kAttentionTile * kRowStride));  // K, then V, of the current tile
  TERN_SHARED(float, queries, (kAttentionVectors * kHeadDim));
  TERN_SHARED(float, scores, (kAttentionVectors * kAttentionTile));  // then probabilities
  TERN_SHARED(float, new_max_of, kAttentionVectors);
  TERN_SHARED(float, correction_of, kAttentionVectors);
  TERN_SHARED(float, sum_of, kAttentionVectors);
  TERN_SHARED(float, old_weight_of, kAttentionVectors);
  TERN_SHARED(float, new_weight_of, kAttentionVectors);

  const bool one_split_per_block = partial_acc != nullptr;
  const AttentionBlock block =
      attention_block(p, query_starts, context_lens, kAttentionVectors, one_split_per_block);
  if (!block.active) return;
  const int sequence = block.sequence, kv_head = block.kv_head, first_head = block.first_head;
  const int heads = block.heads, q_begin = block.q_begin, first_row = block.first_row;
  const int vectors = block.vectors, first_position = block.first_position,
            block_keys = block.block_keys;
  const int block_tiles = (block_keys + kAttentionTile - 1) / kAttentionTile;
  const int split_begin = block.split_begin, split_end = block.split_end;
  const int* block_table = block_tables + static_cast<long long>(sequence) * p.max_blocks_per_seq;
  const long long block_bytes =
      static_cast<long long>(p.n_kv_heads) * p.block_size * kHeadDim * kElementBytes;
  const long long head_bytes =
      static_cast<long long>(kv_head) * p.block_size * kHeadDim * kElementBytes;
  const int tid = threadIdx.x;
  // Vector v is head first_head + v % heads of row first_row + v / heads.
  auto keys_of = [&](int v) { return first_position + v / heads + 1; };
  // Byte offset, in either pool, of 16-byte chunk `part` of this KV head's row at `position`.
  auto chunk_offset = [&](int position, int part) {
    return static_cast<long long>(block_table[position / p.block_size]) * block_bytes + head_bytes +
           (static_cast<long long>(position % p.block_size) * kHeadDim + part * kChunkElements) *
               kElementBytes;
  };

  for (int i = tid; i < vectors * kHeadDim; i += kAttentionThreads) {
    const int v = i / kHeadDim;
    const long long row = q_begin + first_row + v / heads;
    queries[i] = q[row * p.q_stride + static_cast<long long>(first_head + v % heads) * kHeadDim +
                   i % kHeadDim];
  }

  // Thread t < vectors keeps vector t's softmax state; every thread keeps the outputs
  // (v, d) = divmod(tid + k * kAttentionThreads, kHeadDim).
  float running_max = -INFINITY;
  float running_sum = 0.0f;
  float total_max = -INFINITY;
  float total_sum = 0.0f;
  float acc[kOutputsPerThread];
  float total[kOutputsPerThread];
  TERN_ATTENTION_UNROLL
  for (int k = 0; k < kOutputsPerThread; ++k) total[k] = 0.0f;

  for (int split = split_begin; split < split_end; ++split) {
    const int tile_begin = split * kAttentionSplitTiles;
    const int tile_end = min(tile_begin + kAttentionSplitTiles, block_tiles);
    running_max = -INFINITY;
    running_sum = 0.0f;
    TERN_ATTENTION_UNROLL
    for (int k = 0; k < kOutputsPerThread; ++k) acc[k] = 0.0f;

    // Positions tile_start .. + tile_keys - 1 of a pool into kv_tile as floats, in 16-byte chunks.
    const auto stage_tile = [&](const void* pool, int tile_start, int tile_keys) {
      for (int c = tid; c < tile_keys * kChunksPerRow; c += kAttentionThreads) {
        const int key = c / kChunksPerRow;
        const int part = c % kChunksPerRow;
        const long long offset = chunk_offset(tile_start + key, part);
        const uint4 chunk = load_aligned<uint4>(static_cast<const unsigned char*>(pool) + offset);
        TERN_ATTENTION_UNROLL
        for (int e = 0; e < kChunkElements; ++e)
          kv_tile[key * kRowStride + part * kChunkElements + e] = kv_chunk_element<kType>(chunk, e);
      }
    };
    for (int tile = tile_begin; tile < tile_end; ++tile) {
      const int tile_start = tile * kAttentionTile;
      const int tile_keys = min(kAttentionTile, block_keys - tile_start);
      __syncthreads();  // the previous tile's V and probabilities are consumed

      stage_tile(k_pool, tile_start, tile_keys);
      __syncthreads();

      // Scores q.k * scale, each dot product in dimension order as the CPU kernel's. A thread's
      // pairs share one key, so it reads each K element once for all of them.
      {
        const int key = tid % kAttentionTile;
        float dots[kPairsPerThread];
        bool valid[kPairsPerThread];
        TERN_ATTENTION_UNROLL
        for (int k = 0; k < kPairsPerThread; ++k) {
          const int v = (tid + k * kAttentionThreads) / kAttentionTile;
          valid[k] = v < vectors && key < keys_of(v) - tile_start;
          dots[k] = 0.0f;
        }
        if (key < tile_keys) {
          for (int d = 0; d < kHeadDim; ++d) {
            const float key_element = kv_tile[key * kRowStride + d];
            TERN_ATTENTION_UNROLL
            for (int k = 0; k < kPairsPerThread; ++k) {
              const int v = (tid + k * kAttentionThreads) / kAttentionTile;
              if (valid[k]) dots[k] += queries[v * kHeadDim + d] * key_element;
            }
          }
        }
        TERN_ATTENTION_UNROLL
        for (int k = 0; k < kPairsPerThread; ++k)
          if (valid[k]) scores[tid + k * kAttentionThreads] = dots[k] * p.scale;
      }
      __syncthreads();

      // Online softmax: the tile's maximum, and the factor that rescales earlier tiles to it.
      if (tid < vectors) {
        const int length = min(kAttentionTile, keys_of(tid) - tile_start);
        if (length > 0) {
          float tile_max = scores[tid * kAttentionTile];
          for (int key = 1; key < length; ++key) {
            const float s = scores[tid * kAttentionTile + key];
            tile_max = s > tile_max ? s : tile_max;
          }
          const float new_max = tile_max > running_max ? tile_max : running_max;
          new_max_of[tid] = new_max;
          correction_of[tid] = running_max == -INFINITY ? 0.0f : expf(running_max - new_max);
        }
      }
      stage_tile(v_pool, tile_start, tile_keys);  // V over K, which the scores no longer need
      __syncthreads();

      for (int k = 0; k < kPairsPerThread; ++k) {
        const int pair = tid + k * kAttentionThreads;
        const int v = pair / kAttentionTile;
        const int key = pair % kAttentionTile;
        if (v >= vectors || key >= keys_of(v) - tile_start) continue;
        scores[pair] = expf(scores[pair] - new_max_of[v]);
      }
      __syncthreads();

      // The tile's probabilities summed in key order, and weighted V added in key order.
      if (tid < vectors) {
        const int length = min(kAttentionTile, keys_of(tid) - tile_start);
        if (length > 0) {
          float sum = 0.0f;
          for (int key = 0; key < length; ++key) sum += scores[tid * kAttentionTile + key];
          running_sum = running_sum * correction_of[tid] + sum;
          running_max = new_max_of[tid];
        }
      }
      // Weighted V added in key order. Where head_dim divides the block, a thread's outputs share
      // one dimension, and it reads each V element once for all of them.
      int lengths[kOutputsPerThread];
      int longest = 0;
      TERN_ATTENTION_UNROLL
      for (int k = 0; k < kOutputsPerThread; ++k) {
        const int v = (tid + k * kAttentionThreads) / kHeadDim;
        lengths[k] = v < vectors ? min(kAttentionTile, keys_of(v) - tile_start) : 0;
        if (lengths[k] <= 0) continue;
        longest = max(longest, lengths[k]);
        const float correction = correction_of[v];
        if (correction != 1.0f) acc[k] *= correction;
      }
      for (int key = 0; key < longest; ++key) {
        TERN_ATTENTION_UNROLL
        for (int k = 0; k < kOutputsPerThread; ++k) {
          const int index = tid + k * kAttentionThreads;
          if (key < lengths[k])
            acc[k] += scores[index / kHeadDim * kAttentionTile + key] *
                      kv_tile[key * kRowStride + index % kHeadDim];
        }
      }
    }

    // The partition is done: fold it into the total (prefill) or hand it to the merge (decode).
    const int split_start = split * kAttentionSplit;
    if (tid < vectors && keys_of(tid) > split_start) {
      if (one_split_per_block) {
        sum_of[tid] = running_sum;
        if (keys_of(tid) > kAttentionSplit) {
          const long long slot =
              (static_cast<long long>(sequence) * p.n_heads + first_head + tid % heads) *
                  p.max_splits +
              split;
          partial_max[slot] = running_max;
          partial_sum[slot] = running_sum;
        }
      } else {
        const AttentionFoldWeights weights = attention_fold_weights(total_max, running_max);
        total_sum = attention_fold(total_sum, running_sum, weights);
        total_max = weights.max;
        old_weight_of[tid] = weights.old_weight;
        new_weight_of[tid] = weights.new_weight;
      }
    }
    __syncthreads();
    TERN_ATTENTION_UNROLL
    for (int k = 0; k < kOutputsPerThread; ++k) {
      const int index = tid + k * kAttentionThreads;
      const int v = index / kHeadDim;
      const int d = index % kHeadDim;
      if (v >= vectors || keys_of(v) <= split_start) continue;
      if (!one_split_per_block) {
        total[k] = attention_fold(total[k], acc[k], {0.0f, old_weight_of[v], new_weight_of[v]});
      } else if (keys_of(v) <= kAttentionSplit) {
        out[static_cast<long long>(q_begin + first_row + v / heads) * p.out_stride +
            static_cast<long long>(first_head + v % heads) * kHeadDim + d] =
            acc[k] * (1.0f / sum_of[v]);
      } else {
        const long long slot =
            (static_cast<long long>(sequence) * p.n_heads + first_head + v % heads) * p.max_splits +
            split;
        partial_acc[slot * kHeadDim + d] = acc[k];
      }
    }
  }

  if (one_split_per_block) return;
  if (tid < vectors) sum_of[tid] = total_sum;
  __syncthreads();
  TERN_ATTENTION_UNROLL
  for (int k = 0; k < kOutputsPerThread; ++k) {
    const int index = tid + k * kAttentionThreads;
    const int v = index / kHeadDim;
    if (v >= vectors) continue;
    out[static_cast<long long>(q_begin + first_row + v / heads) * p.out_stride +
        static_cast<long long>(first_head + v % heads) * kHeadDim + index % kHeadDim] =
        total[k] * (1.0f / sum_of[v]);
  }
}

// Decode's second step: for each (head, sequence) whose row spans more than one partition, folds
// the partitions in order 0, 1, 2, ... as prefill does in its block, and writes the row. One block
// of kAttentionMergeThreads per (head = blockIdx.x, sequence = blockIdx.y).
__global__ void __launch_bounds__(kAttentionMergeThreads)
    paged_attention_merge_kernel(const float* __restrict__ partial_max,
                                 const float* __restrict__ partial_sum,
                                 const float* __restrict__ partial_acc,
                                 const int* __restrict__ context_lens, float* __restrict__ out,
                                 AttentionParams p) {
  const int head = blockIdx.x;
  const int sequence = blockIdx.y;
  const int context = context_lens[sequence];
  // Written by paged_attention_kernel, or skipped by it as out of bounds.
  if (context <= kAttentionSplit || context > attention_max_context(p, true)) return;
  const int splits = (context + kAttentionSplit - 1) / kAttentionSplit;
  const long long first_slot = (static_cast<long long>(sequence) * p.n_heads + head) * p.max_splits;
  for (int d = threadIdx.x; d < p.head_dim; d += kAttentionMergeThreads) {
    float total_max = -INFINITY;
    float total_sum = 0.0f;
    float total = 0.0f;
    for (int split = 0; split < splits; ++split) {
      const long long slot = first_slot + split;
      const AttentionFoldWeights weights = attention_fold_weights(total_max, partial_max[slot]);
      total_sum = attention_fold(total_sum, partial_sum[slot], weights);
      total = attention_fold(total, partial_acc[slot * p.head_dim + d], weights);
      total_max = weights.max;
    }
    out[static_cast<long long>(sequence) * p.out_stride +
        static_cast<long long>(head) * p.head_dim + d] = total * (1.0f / total_sum);
  }
}

TERN_CUDA_NAMESPACE_END
