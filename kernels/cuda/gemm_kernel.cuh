#pragma once

// The prefill GEMM of the float formats (F32, F16, BF16) on CUDA cores, shared source (nvcc via
// gemm.cu, the host compiler against the SIMT emulator); the integer formats take
// gemm_mma_kernel.cuh. A thread block computes a tile of kGemmRows weight rows x kGemmTokens
// tokens: the tokens' activations are staged in shared memory one K stage at a time and read by
// all eight warps; each warp keeps kGemmRowsPerWarp rows x kGemmTokens tokens of partial sums in
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
// A K stage: 256 float columns.
inline constexpr int kGemmStageCols = 256;

// Grid: (ceil(rows / kGemmRows), ceil(tokens / kGemmTokens)), blocks of kGemmThreads.
template <TensorType kType>
__global__ void __launch_bounds__(kGemmThreads, 1)
    gemm_kernel(const unsigned char* __restrict__ w, int rows, int cols,
                const float* __restrict__ x, int tokens, float* __restrict__ y) {
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

  static_assert(!reads_q8_1_activations(kType), "integer formats take gemm_mma_kernel");
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
    for (int step = 0; step < kGemmStageCols / kFloatSlots; ++step) {
      const int k = step * kFloatSlots + lane;
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
