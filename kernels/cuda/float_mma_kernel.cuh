#pragma once

// The BF16 and F16 matmul on tensor cores, for every token count, shared source (nvcc via gemv.cu
// and gemm.cu, the host compiler against the SIMT emulator). The activations come rounded to the
// weights' type (round_activations_kernel.cuh), so every product of an mma is exact in f32.
//
// The order, which both tiles below keep: element (token t, row r) is one chain of
// mma.m16n8k16 over the columns in steps of 16, k = 0 first, starting from zero. An mma's D
// element depends only on its row of A, its column of B and its C element, so a row's bits
// depend neither on the tile nor on the other tokens of the batch: the decode tile (8 tokens,
// few padded) and the prefill tile (128 x 128) give a token the same bits. There are no slots
// to fold, since a chain of f32 accumulations over the columns is what cuBLAS and a GPU's mma
// pipeline do anyway; a row of 4096 columns is 256 dependent mma.
//
// A thread block stages its weight rows and its tokens' activations through shared memory with
// 16-byte cp.async.cg copies, kStages - 1 stages of kStageCols columns in flight while one is
// computed; ldmatrix loads the fragments. Each staged row is kStageCols / 8 segments of 16 bytes,
// segment j of row r stored at j ^ swizzle(r), so that the 8 rows one ldmatrix matrix reads fall
// in 8 different bank groups.

#include <cstdint>

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/matmul_types.h"
#include "kernels/simt/async_copy.h"
#include "kernels/simt/portable.h"
#include "kernels/simt/tensor_core.h"

TERN_CUDA_NAMESPACE_BEGIN

#if defined(__CUDACC__)
#define TERN_FLOAT_MMA_UNROLL _Pragma("unroll")
#else
#define TERN_FLOAT_MMA_UNROLL
#endif

// A thread block of kWarpsM x kWarpsN warps, each computing kRowTiles m16 tiles of weight rows x
// kTokenTiles n8 tiles of tokens.
template <int kWarpsM, int kWarpsN, int kRowTiles, int kTokenTiles, int kStageColumns,
          int kStageCount>
struct FloatMmaTile {
  static constexpr int kWarps = kWarpsM * kWarpsN;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kWarpRowTiles = kRowTiles;
  static constexpr int kWarpTokenTiles = kTokenTiles;
  static constexpr int kWarpsAlongRows = kWarpsM;
  static constexpr int kRows = kWarpsM * 16 * kRowTiles;
  static constexpr int kTokens = kWarpsN * 8 * kTokenTiles;
  static constexpr int kStageCols = kStageColumns;
  static constexpr int kStages = kStageCount;
  static constexpr int kSegments = kStageCols / 8;  // 16-byte segments per staged row
  static constexpr int kStageHalves = (kRows + kTokens) * kStageCols;
  static constexpr int kSharedBytes = kStages * kStageHalves * 2;
  static_assert(kStageCols == 32 || kStageCols == 64, "the swizzle spreads 4 or 8 segments");
  static_assert(kStages >= 2, "one stage computed while the next lands");
  static_assert(kSharedBytes <= 48 * 1024, "static shared memory");
};

// Decode: 8 tokens (the few real ones and zero padding) and 16 rows per warp, one warp per block
// so that a 4096-row matrix spreads over 256 blocks; 5 stages of 64 columns in flight per warp.
using FloatMmaDecodeTile = FloatMmaTile<1, 1, 1, 1, 64, 6>;
// Prefill: 128 rows x 128 tokens, 8 warps of 64 x 32, 3 stages of 32 columns (48 KiB).
using FloatMmaPrefillTile = FloatMmaTile<2, 4, 4, 4, 32, 3>;

template <TensorType kType>
inline constexpr MmaFloat kMmaFloatType =
    kType == TensorType::bf16 ? MmaFloat::bf16 : MmaFloat::f16;

// Grid: (ceil(rows / Tile::kRows), ceil(tokens / Tile::kTokens)), blocks of Tile::kThreads;
// uses_float_mma(kType, cols, w) holds and x is [tokens][cols] in kType.
template <TensorType kType, class Tile>
__global__ void __launch_bounds__(Tile::kThreads, 1)
    float_mma_kernel(const std::uint16_t* __restrict__ w, int rows, int cols,
                     const std::uint16_t* __restrict__ x, int tokens, float* __restrict__ y) {
  static_assert(kType == TensorType::bf16 || kType == TensorType::f16, "16-bit float weights");
  constexpr int kRowTiles = Tile::kWarpRowTiles, kTokenTiles = Tile::kWarpTokenTiles;
  TERN_SHARED_ALIGNED(unsigned short, staged, Tile::kStages* Tile::kStageHalves, 16);

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int group = lane / 4, thread = lane % 4;
  const int warp_row = warp % Tile::kWarpsAlongRows * 16 * kRowTiles;     // within the block's rows
  const int warp_token = warp / Tile::kWarpsAlongRows * 8 * kTokenTiles;  // within its tokens
  const int row_base = blockIdx.x * Tile::kRows;
  const int token0 = blockIdx.y * Tile::kTokens;
  const int count = min(Tile::kTokens, tokens - token0);
  const int steps = (cols + Tile::kStageCols - 1) / Tile::kStageCols;

  // Where segment `segment` of staged row r in stage slot `slot` starts, in halves.
  const auto at = [](int slot, int r, int segment) {
    const int swizzle = r * Tile::kSegments / 8 % Tile::kSegments;
    return slot * Tile::kStageHalves + r * Tile::kStageCols + 8 * (segment ^ swizzle);
  };

  // Token rows past the batch stay zero in every slot: no copy ever lands there.
  for (int i = threadIdx.x; i < Tile::kStages * (Tile::kTokens - count) * Tile::kSegments;
       i += Tile::kThreads) {
    const int segment = i % Tile::kSegments;
    const int r = Tile::kRows + count + i / Tile::kSegments % (Tile::kTokens - count);
    const int slot = i / Tile::kSegments / (Tile::kTokens - count);
    TERN_FLOAT_MMA_UNROLL
    for (int h = 0; h < 8; ++h) staged[at(slot, r, segment) + h] = 0;
  }

  // Stage `step`'s copies into its slot, committed as one group (an empty one past the end, so
  // that wait_group counts the same groups in every iteration). Weight rows past the matrix read
  // its last row, whose outputs are not stored.
  const auto start = [&](int step) {
    if (step < steps) {
      const int first = step * Tile::kStageCols;
      const int segments = min(Tile::kStageCols, cols - first) / 8;
      const int slot = step % Tile::kStages;
      const int rows_staged = Tile::kRows + count;
      for (int i = threadIdx.x; i < rows_staged * Tile::kSegments; i += Tile::kThreads) {
        const int r = i / Tile::kSegments, segment = i % Tile::kSegments;
        if (segment >= segments) continue;
        const std::uint16_t* source =
            r < Tile::kRows ? w + static_cast<long long>(min(row_base + r, rows - 1)) * cols
                            : x + static_cast<long long>(token0 + r - Tile::kRows) * cols;
        cp_async<16, AsyncCache::global_only>(staged, at(slot, r, segment),
                                              source + first + 8 * segment);
      }
    }
    cp_async_commit_group();
  };

  MmaAccF32 acc[kRowTiles][kTokenTiles];
  TERN_FLOAT_MMA_UNROLL
  for (int m = 0; m < kRowTiles; ++m) {
    TERN_FLOAT_MMA_UNROLL
    for (int n = 0; n < kTokenTiles; ++n) {
      TERN_FLOAT_MMA_UNROLL
      for (int i = 0; i < 4; ++i) acc[m][n][i] = 0.0f;
    }
  }

  TERN_FLOAT_MMA_UNROLL
  for (int s = 0; s < Tile::kStages - 1; ++s) start(s);
  // ldmatrix rows: lane l gives row l % 8 of matrix l / 8. For A (x4), matrices 0..3 are rows
  // 0-7 and 8-15 of k 0-7, then of k 8-15: registers a0..a3 of the m16n8k16 layout. For B (x2),
  // matrices 0 and 1 are the tile's 8 tokens at k 0-7 and k 8-15: registers b0 and b1.
  const int a_row = warp_row + lane % 8 + 8 * (lane / 8 % 2);
  const int a_half = lane / 16;  // which 8 of the 16 columns
  const int b_row = Tile::kRows + warp_token + lane % 8;
  const int b_half = lane / 8 % 2;
  for (int step = 0; step < steps; ++step) {
    cp_async_wait_group<Tile::kStages - 2>();  // this thread's copies of `step` have landed
    __syncthreads();  // every thread's, and every thread is done with the slot start() fills
    start(step + Tile::kStages - 1);
    const int slot = step % Tile::kStages;
    const int k16_steps = min(Tile::kStageCols, cols - step * Tile::kStageCols) / 16;
    TERN_FLOAT_MMA_UNROLL
    for (int k = 0; k < Tile::kStageCols / 16; ++k) {
      if (k >= k16_steps) break;  // the same for the whole block
      MmaA16 a[kRowTiles];
      MmaB16 b[kTokenTiles];
      TERN_FLOAT_MMA_UNROLL
      for (int m = 0; m < kRowTiles; ++m)
        ldmatrix<4>(a[m], staged, at(slot, a_row + 16 * m, 2 * k + a_half));
      TERN_FLOAT_MMA_UNROLL
      for (int n = 0; n < kTokenTiles; ++n)
        ldmatrix<2>(b[n], staged, at(slot, b_row + 8 * n, 2 * k + b_half));
      TERN_FLOAT_MMA_UNROLL
      for (int m = 0; m < kRowTiles; ++m) {
        TERN_FLOAT_MMA_UNROLL
        for (int n = 0; n < kTokenTiles; ++n)
          mma_m16n8k16<kMmaFloatType<kType>>(acc[m][n], a[m], b[n], acc[m][n]);
      }
    }
  }
  cp_async_wait_group<0>();  // the empty groups past the end

  // D element i: row group + 8 (i / 2) of the m16 tile, token 2 thread + i % 2 of the n8 tile.
  TERN_FLOAT_MMA_UNROLL
  for (int m = 0; m < kRowTiles; ++m) {
    TERN_FLOAT_MMA_UNROLL
    for (int n = 0; n < kTokenTiles; ++n) {
      TERN_FLOAT_MMA_UNROLL
      for (int i = 0; i < 4; ++i) {
        const int row = row_base + warp_row + 16 * m + group + 8 * (i / 2);
        const int t = warp_token + 8 * n + 2 * thread + i % 2;
        if (row < rows && t < count)
          y[static_cast<long long>(token0 + t) * rows + row] = acc[m][n][i];
      }
    }
  }
}

#undef TERN_FLOAT_MMA_UNROLL

// The launch of the tile's kernel over w and x.rounded (uses_float_mma(w) holds; the launchers
// have checked the arguments).
template <TensorType kType, class Tile>
cudaError_t launch_float_mma(const DeviceWeights& w, const DeviceActivations& x, int tokens,
                             float* y, cudaStream_t stream) {
  const dim3 grid((w.rows + Tile::kRows - 1) / Tile::kRows,
                  (tokens + Tile::kTokens - 1) / Tile::kTokens);
  TERN_LAUNCH((float_mma_kernel<kType, Tile>), grid, Tile::kThreads, 0, stream,
              static_cast<const std::uint16_t*>(w.data), w.rows, w.cols, x.rounded, tokens, y);
  return cudaGetLastError();
}

TERN_CUDA_NAMESPACE_END
