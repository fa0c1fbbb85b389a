#pragma once

// The prefill GEMM on CUDA cores, shared source (nvcc via gemm.cu, the host compiler against the
// SIMT emulator). A thread block computes a tile of kGemmRows weight rows x kGemmTokens tokens:
// the tokens' activations are staged in shared memory one K stage at a time and read by all
// eight warps; each warp keeps kGemmRowsPerWarp rows x kGemmTokens tokens of partial sums in
// registers and reuses each weight it loads for all the tile's tokens. Lane s computes slot s
// of the canonical order (matmul_chunks.cuh) whatever the tile, so a row's bits depend neither
// on the number of tokens in the launch nor on the tile a token falls in, and equal the GEMV's.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/matmul_chunks.cuh"

TERN_CUDA_NAMESPACE_BEGIN

inline constexpr int kGemmWarps = 8;
inline constexpr int kGemmRowsPerWarp = 2;
inline constexpr int kGemmRows = kGemmWarps * kGemmRowsPerWarp;  // 16 rows per thread block
inline constexpr int kGemmTokens = 8;                            // tokens per thread block
inline constexpr int kGemmThreads = 32 * kGemmWarps;
// A K stage: 32 chunks (1024 columns, one per lane) of Q8_1 blocks, or 256 float columns.
inline constexpr int kGemmStageChunks = 32;
inline constexpr int kGemmStageCols = 256;
inline constexpr int kQ8_1Words = 10;  // d, sum and 8 words of quants

// Grid: (ceil(rows / kGemmRows), ceil(tokens / kGemmTokens)), blocks of kGemmThreads.
template <TensorType kType>
__global__ void __launch_bounds__(kGemmThreads, 1)
    gemm_kernel(const unsigned char* __restrict__ w, int rows, int cols,
                const float* __restrict__ x, const BlockQ8_1* __restrict__ xq, int tokens,
                float* __restrict__ y) {
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int row0 = blockIdx.x * kGemmRows + warp * kGemmRowsPerWarp;
  const int token0 = blockIdx.y * kGemmTokens;
  const int count = min(kGemmTokens, tokens - token0);
  const long long row_bytes = weight_row_bytes(kType, cols);

  float acc[kGemmRowsPerWarp][kGemmTokens];
  TERN_MATMUL_UNROLL
  for (int r = 0; r < kGemmRowsPerWarp; ++r) {
    TERN_MATMUL_UNROLL
    for (int t = 0; t < kGemmTokens; ++t) acc[r][t] = 0.0f;
  }

  if constexpr (reads_q8_1_activations(kType)) {
    using Ops = ChunkOps<kType>;
    const int chunks = cols / 32;
    // tile[(word * kGemmTokens + t) * 32 + c]: word 0 is d's bits, 1 the sum, 2..9 the quants of
    // chunk c of the stage for token t; lane c reads a row of 32 consecutive words.
    constexpr int kTileWords = kQ8_1Words * kGemmTokens * kGemmStageChunks;
    TERN_SHARED(int, tile, kTileWords);
    for (int stage = 0; stage < chunks; stage += kGemmStageChunks) {
      __syncthreads();  // the previous stage is consumed
      for (int i = threadIdx.x; i < kTileWords; i += kGemmThreads) {
        // i walks each token's blocks in memory order, so the global reads are coalesced.
        const int t = i / (kQ8_1Words * kGemmStageChunks);
        const int c = i / kQ8_1Words % kGemmStageChunks;
        const int word = i % kQ8_1Words;
        int value = 0;
        if (t < count && stage + c < chunks) {
          const unsigned char* block = reinterpret_cast<const unsigned char*>(
              xq + static_cast<long long>(token0 + t) * chunks + stage + c);
          value = load_aligned<int>(block + 4 * word);
        }
        tile[(word * kGemmTokens + t) * kGemmStageChunks + c] = value;
      }
      __syncthreads();
      const int chunk = stage + lane;
      if (chunk < chunks && row0 < rows) {
        // The warp's rows' weights for this chunk, then each token's activations read once from
        // shared memory for all of them. Rows past the end compute on the last row and are not
        // stored.
        typename Ops::Scales scales[kGemmRowsPerWarp];
        Quarter parts[kGemmRowsPerWarp][4];
        TERN_MATMUL_UNROLL
        for (int r = 0; r < kGemmRowsPerWarp; ++r) {
          const unsigned char* w_row =
              w + static_cast<long long>(min(row0 + r, rows - 1)) * row_bytes;
          scales[r] = Ops::scales(w_row, chunk);
          TERN_MATMUL_UNROLL
          for (int s = 0; s < 4; ++s) parts[r][s] = Ops::quarter(w_row, chunk, s);
        }
        TERN_MATMUL_UNROLL
        for (int t = 0; t < kGemmTokens; ++t) {
          if (t < count) {
            int quants[8];
            TERN_MATMUL_UNROLL
            for (int q = 0; q < 8; ++q)
              quants[q] = tile[((2 + q) * kGemmTokens + t) * kGemmStageChunks + lane];
            const float xd = __int_as_float(tile[t * kGemmStageChunks + lane]);
            const int xsum = tile[(kGemmTokens + t) * kGemmStageChunks + lane];
            TERN_MATMUL_UNROLL
            for (int r = 0; r < kGemmRowsPerWarp; ++r) {
              int dot = 0;
              TERN_MATMUL_UNROLL
              for (int s = 0; s < 4; ++s)
                dot +=
                    quarter_dot(parts[r][s], quants[Ops::x_word(s, 0)], quants[Ops::x_word(s, 1)]);
              acc[r][t] = Ops::accumulate(scales[r], dot, xd, xsum, acc[r][t]);
            }
          }
        }
      }
    }
  } else {
    // tile[t * kGemmStageCols + k]: column stage + k of token t.
    constexpr int kTileFloats = kGemmTokens * kGemmStageCols;
    TERN_SHARED(float, tile, kTileFloats);
    for (int stage = 0; stage < cols; stage += kGemmStageCols) {
      __syncthreads();
      for (int i = threadIdx.x; i < kTileFloats; i += kGemmThreads) {
        const int t = i / kGemmStageCols, k = i % kGemmStageCols;
        tile[i] = t < count && stage + k < cols
                      ? x[static_cast<long long>(token0 + t) * cols + stage + k]
                      : 0.0f;
      }
      __syncthreads();
      TERN_MATMUL_UNROLL
      for (int step = 0; step < kGemmStageCols / kSlots; ++step) {
        const int k = step * kSlots + lane;
        if (stage + k < cols && row0 < rows) {
          float weights[kGemmRowsPerWarp];
          TERN_MATMUL_UNROLL
          for (int r = 0; r < kGemmRowsPerWarp; ++r) {
            weights[r] = weight_at<kType>(
                w + static_cast<long long>(min(row0 + r, rows - 1)) * row_bytes, stage + k);
          }
          TERN_MATMUL_UNROLL
          for (int t = 0; t < kGemmTokens; ++t) {
            if (t < count) {
              const float value = tile[t * kGemmStageCols + k];
              TERN_MATMUL_UNROLL
              for (int r = 0; r < kGemmRowsPerWarp; ++r)
                acc[r][t] = fmaf(weights[r], value, acc[r][t]);
            }
          }
        }
      }
    }
  }

  TERN_MATMUL_UNROLL
  for (int r = 0; r < kGemmRowsPerWarp; ++r) {
    TERN_MATMUL_UNROLL
    for (int t = 0; t < kGemmTokens; ++t) {
      if (row0 + r < rows && t < count) {  // the same for the whole warp
        const float sum = warp_sum(acc[r][t]);
        if (lane == 0) y[static_cast<long long>(token0 + t) * rows + row0 + r] = sum;
      }
    }
  }
}

TERN_CUDA_NAMESPACE_END
