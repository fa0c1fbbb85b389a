#pragma once

// The prefill GEMM of the integer formats (Q8_0, Q4_0, Q4_K, Q6_K) on tensor cores, shared
// source (nvcc via gemm.cu, the host compiler against the SIMT emulator). A thread block computes
// a tile of kMmaRows weight rows x kMmaTokens tokens with kChunkSlots warps, warp q holding the
// whole tile's accumulators of slot q of matmul_chunks.cuh's canonical order: it takes chunks
// q, q + 8, q + 16, ... in that order. Each chunk's exact integer dots come from mma.m16n8k32
// (Q6_K: two mma.m16n8k16, one per 16-value sub-block with its own scale) over the weights'
// quants and the tokens' Q8_1 quants, and enter the slot through ChunkOps::accumulate, as in the
// GEMV; the eight slots are then folded through shared memory in quad_slots_sum's tree. So a
// row's bits equal the GEMV's and do not depend on the tile a token falls in.
//
// Fragments come straight from ChunkOps::quarter: lane (group g, thread t) of an m16n8k32 holds
// k values 4t..4t+3 and 16 + 4t..16 + 4t + 3 of rows g and g + 8, which the format's quarter t
// gives as its two words, and the B operand holds the same k values of token g as the Q8_1 words
// x_word(t, 0) and x_word(t, 1). Integer sums are exact, so which of a chunk's values a k index
// stands for does not matter as long as A and B agree.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/matmul_chunks.cuh"
#include "kernels/simt/tensor_core.h"

TERN_CUDA_NAMESPACE_BEGIN

inline constexpr int kMmaWarps = kChunkSlots;  // a warp per slot
inline constexpr int kMmaThreads = 32 * kMmaWarps;
inline constexpr int kMmaRowTiles = 4;                 // m16 tiles per block
inline constexpr int kMmaTokenTiles = 4;               // n8 tiles per block
inline constexpr int kMmaRows = 16 * kMmaRowTiles;     // 64 weight rows per block
inline constexpr int kMmaTokens = 8 * kMmaTokenTiles;  // 32 tokens per block
// A K stage: 16 chunks of Q8_1 blocks (512 columns), two per warp.
inline constexpr int kMmaStageChunks = 2 * kChunkSlots;
inline constexpr int kMmaQ8_1Words = 10;  // d, sum and 8 words of quants
inline constexpr int kMmaStageWords = kMmaQ8_1Words * kMmaTokens * kMmaStageChunks;
// One warp's accumulators, 32 lanes x kMmaRowTiles x kMmaTokenTiles x 4.
inline constexpr int kMmaWarpAccumulators = 32 * kMmaRowTiles * kMmaTokenTiles * 4;
// Shared memory: the activation stage, then (reused) the slot fold, four warps' accumulators.
inline constexpr int kMmaSharedWords =
    kMmaStageWords > 4 * kMmaWarpAccumulators ? kMmaStageWords : 4 * kMmaWarpAccumulators;

template <TensorType kType>
inline constexpr MmaInt kMmaWeightType =
    kType == TensorType::q4_0 || kType == TensorType::q4_k ? MmaInt::u8 : MmaInt::s8;

// Grid: (ceil(rows / kMmaRows), ceil(tokens / kMmaTokens)), blocks of kMmaThreads.
template <TensorType kType>
__global__ void __launch_bounds__(kMmaThreads, 1)
    gemm_mma_kernel(const unsigned char* __restrict__ w, int rows, int cols,
                    const BlockQ8_1* __restrict__ xq, int tokens, float* __restrict__ y) {
  using Ops = ChunkOps<kType>;
  TERN_SHARED(int, shared, kMmaSharedWords);
  const int warp = threadIdx.x / 32;  // the slot
  const int lane = threadIdx.x % 32;
  const int group = lane / 4, thread = lane % 4;
  const int row_base = blockIdx.x * kMmaRows;
  const int token0 = blockIdx.y * kMmaTokens;
  const int count = min(kMmaTokens, tokens - token0);
  const int chunks = cols / 32;
  const long long row_bytes = weight_row_bytes(kType, cols);
  // Rows g and g + 8 of each m16 tile; rows past the end read the last row and are not stored.
  const unsigned char* w_rows[kMmaRowTiles][2];
  TERN_MATMUL_UNROLL
  for (int m = 0; m < kMmaRowTiles; ++m) {
    TERN_MATMUL_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int row = min(row_base + 16 * m + group + 8 * h, rows - 1);
      w_rows[m][h] = w + static_cast<long long>(row) * row_bytes;
    }
  }

  float acc[kMmaRowTiles][kMmaTokenTiles][4];
  TERN_MATMUL_UNROLL
  for (int m = 0; m < kMmaRowTiles; ++m) {
    TERN_MATMUL_UNROLL
    for (int n = 0; n < kMmaTokenTiles; ++n) {
      TERN_MATMUL_UNROLL
      for (int i = 0; i < 4; ++i) acc[m][n][i] = 0.0f;
    }
  }
  // Word `word` of token t's Q8_1 block for chunk c of the stage.
  const auto staged = [&](int word, int t, int c) {
    return shared[(word * kMmaTokens + t) * kMmaStageChunks + c];
  };

  for (int stage = 0; stage < chunks; stage += kMmaStageChunks) {
    __syncthreads();  // the previous stage is consumed
    for (int i = threadIdx.x; i < kMmaStageWords; i += kMmaThreads) {
      // i walks each token's blocks in memory order, so the global reads are coalesced.
      const int t = i / (kMmaQ8_1Words * kMmaStageChunks);
      const int c = i / kMmaQ8_1Words % kMmaStageChunks;
      const int word = i % kMmaQ8_1Words;
      int value = 0;
      if (t < count && stage + c < chunks) {
        const unsigned char* block = reinterpret_cast<const unsigned char*>(
            xq + static_cast<long long>(token0 + t) * chunks + stage + c);
        value = load_aligned<int>(block + 4 * word);
      }
      shared[(word * kMmaTokens + t) * kMmaStageChunks + c] = value;
    }
    __syncthreads();
    TERN_MATMUL_UNROLL
    for (int pass = 0; pass < kMmaStageChunks / kChunkSlots; ++pass) {
      const int c = pass * kChunkSlots + warp;  // chunk stage + c is in this warp's slot
      const int chunk = stage + c;
      if (chunk >= chunks) break;  // the same for the whole warp
      typename Ops::Scales scales[kMmaRowTiles][2];
      MmaA16 a[kMmaRowTiles];                   // m16n8k32: the chunk's 32 values
      MmaA8K16 halves[kMmaRowTiles][2];         // Q6_K: its two 16-value sub-blocks
      int sub_scales[kMmaRowTiles][2][2] = {};  // Q6_K: [m][row g, g + 8][sub-block]
      TERN_MATMUL_UNROLL
      for (int m = 0; m < kMmaRowTiles; ++m) {
        TERN_MATMUL_UNROLL
        for (int h = 0; h < 2; ++h) {
          scales[m][h] = Ops::scales(w_rows[m][h], chunk);
          if constexpr (kType == TensorType::q6_k) {
            // Sub-block s holds quarters 2s and 2s + 1; thread t takes word t % 2 of quarter
            // 2s + t / 2: k values 4t..4t+3 of the m16n8k16.
            TERN_MATMUL_UNROLL
            for (int s = 0; s < 2; ++s) {
              const Quarter q = Ops::quarter(w_rows[m][h], chunk, 2 * s + thread / 2);
              halves[m][s][h] = static_cast<std::uint32_t>(q.w[thread % 2]);
              sub_scales[m][h][s] = q.scale;
            }
          } else {
            const Quarter q = Ops::quarter(w_rows[m][h], chunk, thread);
            a[m][h] = static_cast<std::uint32_t>(q.w[0]);
            a[m][2 + h] = static_cast<std::uint32_t>(q.w[1]);
          }
        }
      }
      TERN_MATMUL_UNROLL
      for (int n = 0; n < kMmaTokenTiles; ++n) {
        const int t = 8 * n + group;  // the B operand's token
        // The C fragment's tokens 2 thread and 2 thread + 1 of the tile: their d and sum.
        float xd[2];
        int xsum[2];
        TERN_MATMUL_UNROLL
        for (int i = 0; i < 2; ++i) {
          xd[i] = __int_as_float(staged(0, 8 * n + 2 * thread + i, c));
          xsum[i] = staged(1, 8 * n + 2 * thread + i, c);
        }
        TERN_MATMUL_UNROLL
        for (int m = 0; m < kMmaRowTiles; ++m) {
          int dots[4];
          if constexpr (kType == TensorType::q6_k) {
            MmaAccS32 sub[2];
            TERN_MATMUL_UNROLL
            for (int s = 0; s < 2; ++s) {
              MmaB8K16 b;
              b[0] = static_cast<std::uint32_t>(
                  staged(2 + Ops::x_word(2 * s + thread / 2, thread % 2), t, c));
              const MmaAccS32 zero{};
              mma_m16n8k16<MmaInt::s8, MmaInt::s8>(sub[s], halves[m][s], b, zero);
            }
            TERN_MATMUL_UNROLL
            for (int i = 0; i < 4; ++i) {
              const int h = i / 2;
              dots[i] = sub_scales[m][h][0] * sub[0][i] + sub_scales[m][h][1] * sub[1][i];
            }
          } else {
            MmaB16 b;
            b[0] = static_cast<std::uint32_t>(staged(2 + Ops::x_word(thread, 0), t, c));
            b[1] = static_cast<std::uint32_t>(staged(2 + Ops::x_word(thread, 1), t, c));
            MmaAccS32 d;
            const MmaAccS32 zero{};
            mma_m16n8k32<kMmaWeightType<kType>, MmaInt::s8>(d, a[m], b, zero);
            TERN_MATMUL_UNROLL
            for (int i = 0; i < 4; ++i) dots[i] = d[i];
          }
          // C element i: row g + 8 (i / 2) of the tile, token 2 thread + i % 2.
          TERN_MATMUL_UNROLL
          for (int i = 0; i < 4; ++i) {
            acc[m][n][i] =
                Ops::accumulate(scales[m][i / 2], dots[i], xd[i % 2], xsum[i % 2], acc[m][n][i]);
          }
        }
      }
    }
  }

  // The eight slots folded as quad_slots_sum folds them: warps 4..7 into 0..3 (slots 4 apart),
  // 2..3 into 0..1, then 1 into 0, each through shared memory.
  const auto at = [&](int holder, int m, int n, int i) {
    return ((holder * kMmaRowTiles + m) * kMmaTokenTiles + n) * 4 * 32 + i * 32 + lane;
  };
  for (int half = kChunkSlots / 2; half >= 1; half /= 2) {
    __syncthreads();  // the stage, or the previous level's values, are consumed
    if (warp >= half && warp < 2 * half) {
      TERN_MATMUL_UNROLL
      for (int m = 0; m < kMmaRowTiles; ++m) {
        TERN_MATMUL_UNROLL
        for (int n = 0; n < kMmaTokenTiles; ++n) {
          TERN_MATMUL_UNROLL
          for (int i = 0; i < 4; ++i)
            shared[at(warp - half, m, n, i)] = __float_as_int(acc[m][n][i]);
        }
      }
    }
    __syncthreads();
    if (warp < half) {
      TERN_MATMUL_UNROLL
      for (int m = 0; m < kMmaRowTiles; ++m) {
        TERN_MATMUL_UNROLL
        for (int n = 0; n < kMmaTokenTiles; ++n) {
          TERN_MATMUL_UNROLL
          for (int i = 0; i < 4; ++i) acc[m][n][i] += __int_as_float(shared[at(warp, m, n, i)]);
        }
      }
    }
  }
  if (warp != 0) return;
  TERN_MATMUL_UNROLL
  for (int m = 0; m < kMmaRowTiles; ++m) {
    TERN_MATMUL_UNROLL
    for (int n = 0; n < kMmaTokenTiles; ++n) {
      TERN_MATMUL_UNROLL
      for (int i = 0; i < 4; ++i) {
        const int row = row_base + 16 * m + group + 8 * (i / 2);
        const int t = 8 * n + 2 * thread + i % 2;
        if (row < rows && t < count)
          y[static_cast<long long>(token0 + t) * rows + row] = acc[m][n][i];
      }
    }
  }
}

TERN_CUDA_NAMESPACE_END
