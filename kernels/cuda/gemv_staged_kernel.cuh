#pragma once

// The decode GEMV of Q8_0 and Q4_0 rows that start 16-byte aligned (whole groups of 8 blocks),
// shared source (nvcc via gemv.cu, the host compiler against the SIMT emulator). Blocks of 34 and
// 18 bytes leave a lane no wider load than two bytes in place, so each warp streams its row
// through shared memory instead: 16-byte cp.async copies, which fill whole 512-byte lines, in a
// ring of kGemvStages segments of 32 blocks with the next segments in flight while one is
// computed. Lane s then takes block s of each segment: slot s of matmul_chunks.cuh's canonical
// order, so a row gets the bits gemv_kernel and the GEMM give it.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/gemv_kernel.cuh"
#include "kernels/cuda/matmul_chunks.cuh"
#include "kernels/cuda/matmul_types.h"
#include "kernels/cuda/weight_formats.h"
#include "kernels/simt/async_copy.h"

TERN_CUDA_NAMESPACE_BEGIN

inline constexpr int kGemvStagedWarps = 4;  // rows per thread block
inline constexpr int kGemvStages = 4;       // segments of 32 blocks per warp: 3 in flight

// A chunk's exact integer dot with its Q8_1 block (x: its eight quant words).
template <TensorType kType>
__device__ __forceinline__ int staged_chunk_dot(const int (&w)[8], const int (&x)[8]) {
  int dot = 0;
  if constexpr (kType == TensorType::q8_0) {
    TERN_MATMUL_UNROLL
    for (int k = 0; k < 8; ++k) dot = __dp4a(w[k], x[k], dot);
  } else {
    // Bytes 4k..4k+3 hold elements 4k.. in their low nibbles and 16 + 4k.. in their high ones.
    TERN_MATMUL_UNROLL
    for (int k = 0; k < 4; ++k) {
      dot = __dp4a(w[k] & 0x0F0F0F0F, x[k], dot);
      dot = __dp4a((w[k] >> 4) & 0x0F0F0F0F, x[k + 4], dot);
    }
  }
  return dot;
}

// kTokens (1, 2, 4 or 8) tokens per thread block. Grid: (ceil(rows / kGemvStagedWarps),
// ceil(tokens / kTokens)), blocks of 32 * kGemvStagedWarps; gemv_stages_rows must hold.
template <TensorType kType, int kTokens>
__global__ void __launch_bounds__(32 * kGemvStagedWarps, 4)
    gemv_staged_kernel(const unsigned char* __restrict__ w, int rows, int cols,
                       const BlockQ8_1* __restrict__ xq, int tokens, float* __restrict__ y) {
  static_assert(gemv_stages_format(kType), "the staged GEMV reads Q8_0 and Q4_0");
  constexpr int kBlockHalves = WeightFormat<kType>::kBlockBytes / 2;  // 17 or 9
  constexpr int kWeightWords = kType == TensorType::q8_0 ? 8 : 4;
  constexpr int kSegmentHalves = 32 * kBlockHalves;
  constexpr int kWarpHalves = kGemvStages * kSegmentHalves;
  TERN_SHARED_ALIGNED(unsigned short, staged, kGemvStagedWarps* kWarpHalves, 16);

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kGemvStagedWarps + warp;
  if (row >= rows) return;  // the whole warp; only warp-wide barriers follow
  const int token0 = blockIdx.y * kTokens;
  const int count = min(kTokens, tokens - token0);
  const int chunks = cols / 32;
  const int segments = (chunks + 31) / 32;
  const unsigned char* w_row = w + static_cast<long long>(row) * weight_row_bytes<kType>(cols);
  const int ring = warp * kWarpHalves;

  // Segment `segment`'s copies into its slot of the ring, committed as one group: an empty one
  // past the row's end, so that wait_group counts the same groups in every iteration.
  const auto start = [&](int segment) {
    if (segment < segments) {
      const int pieces = min(32, chunks - 32 * segment) * kBlockHalves / 8;
      const unsigned char* source = w_row + static_cast<long long>(segment) * kSegmentHalves * 2;
      const int slot = ring + segment % kGemvStages * kSegmentHalves;
      for (int piece = lane; piece < pieces; piece += 32)
        cp_async<16, AsyncCache::global_only>(staged, slot + 8 * piece, source + 16 * piece);
    }
    cp_async_commit_group();
  };

  float acc[kTokens];
  TERN_MATMUL_UNROLL
  for (int t = 0; t < kTokens; ++t) acc[t] = 0.0f;
  TERN_MATMUL_UNROLL
  for (int s = 0; s < kGemvStages - 1; ++s) start(s);
  for (int segment = 0; segment < segments; ++segment) {
    // Into the slot the previous iteration read (and left behind its closing __syncwarp).
    start(segment + kGemvStages - 1);
    cp_async_wait_group<kGemvStages - 1>();  // this lane's copies of `segment` have landed
    __syncwarp();                            // and every lane's
    const int chunk = 32 * segment + lane;
    if (chunk < chunks) {
      const int at = ring + segment % kGemvStages * kSegmentHalves + lane * kBlockHalves;
      const typename ChunkOps<kType>::Scales scales{
          __half2float(__ushort_as_half(static_cast<unsigned short>(staged[at])))};
      int words[8] = {};
      TERN_MATMUL_UNROLL
      for (int k = 0; k < kWeightWords; ++k) {
        words[k] = static_cast<int>(static_cast<unsigned>(staged[at + 1 + 2 * k]) |
                                    static_cast<unsigned>(staged[at + 2 + 2 * k]) << 16);
      }
      TERN_MATMUL_UNROLL
      for (int t = 0; t < kTokens; ++t) {
        if (t < count) {
          const unsigned char* block = reinterpret_cast<const unsigned char*>(
              xq + static_cast<long long>(token0 + t) * chunks + chunk);
          const uint2 header = load_aligned<uint2>(block);  // d's bits and the quants' sum
          int x[8];
          TERN_MATMUL_UNROLL
          for (int k = 0; k < 4; ++k) {
            const uint2 pair = load_aligned<uint2>(block + 8 + 8 * k);
            x[2 * k] = static_cast<int>(pair.x);
            x[2 * k + 1] = static_cast<int>(pair.y);
          }
          acc[t] = ChunkOps<kType>::accumulate(scales, staged_chunk_dot<kType>(words, x),
                                               __uint_as_float(header.x),
                                               static_cast<int>(header.y), acc[t]);
        }
      }
    }
    __syncwarp();  // the slot is read before a later start copies over it
  }
  store_gemv_sums(acc, count, y + static_cast<long long>(token0) * rows + row, rows);
}

TERN_CUDA_NAMESPACE_END
