#pragma once

// The decode GEMV, shared source (nvcc via gemv.cu, the host compiler against the SIMT
// emulator). One warp per weight row and up to kGemvMaxTokens tokens: a row is streamed once from
// global memory for all of them. The warp computes the canonical order of matmul_chunks.cuh
// (slot q in lane quad q, a quarter chunk per lane, for the integer formats; slot s in lane s for
// the float ones), so a row gets the bits the GEMM gives it.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/matmul_chunks.cuh"

TERN_CUDA_NAMESPACE_BEGIN

// A GEMV warp's ending: each token's slot sums combined in the canonical order (quad_slots_sum for
// the integer formats' 8 slots held by lane quads, warp_sum for the float formats' 32 held by
// lanes), and token t's sum stored by lane 0 at y[t * stride] for t < count.
template <bool kChunkSlots, int kTokens>
__device__ __forceinline__ void store_gemv_sums(const float (&acc)[kTokens], int count, float* y,
                                                int stride) {
  TERN_MATMUL_UNROLL
  for (int t = 0; t < kTokens; ++t) {
    if (t < count) {  // the same for the whole warp
      const float sum = kChunkSlots ? quad_slots_sum(acc[t]) : warp_sum(acc[t]);
      if (threadIdx.x % 32 == 0) y[static_cast<long long>(t) * stride] = sum;
    }
  }
}

// Adds chunk `chunk` of a weight row to its quad's slot for each token t < count: this lane's
// quarter dotted with the token's Q8_1 words, the quad's four quarters added by shuffles (the
// chunk's exact integer dot), then ChunkOps::accumulate. Every lane of the warp calls it (the
// shuffles); a lane whose chunk is past the row's end passes valid = false and adds nothing.
template <TensorType kType, int kTokens>
__device__ __forceinline__ void add_chunk_quarter(const Quarter& part,
                                                  const typename ChunkOps<kType>::Scales& scales,
                                                  bool valid, const BlockQ8_1* __restrict__ xq,
                                                  int token0, int count, int chunks, int chunk,
                                                  int quarter, float (&acc)[kTokens]) {
  using Ops = ChunkOps<kType>;
  TERN_MATMUL_UNROLL
  for (int t = 0; t < kTokens; ++t) {
    if (t < count) {  // the same for the whole warp
      const unsigned char* block = reinterpret_cast<const unsigned char*>(
          xq + static_cast<long long>(token0 + t) * chunks + chunk);
      int dot = 0;
      if (valid) {
        dot = quarter_dot(part, load_aligned<int>(block + 8 + 4 * Ops::x_word(quarter, 0)),
                          load_aligned<int>(block + 8 + 4 * Ops::x_word(quarter, 1)));
      }
      dot += __shfl_xor_sync(0xffffffffu, dot, 1);  // the chunk's exact integer dot
      dot += __shfl_xor_sync(0xffffffffu, dot, 2);
      if (valid) {
        const float xd = __int_as_float(load_aligned<int>(block));
        acc[t] = Ops::accumulate(scales, dot, xd, load_aligned<int>(block + 4), acc[t]);
      }
    }
  }
}

inline constexpr int kGemvWarps = 4;      // rows per thread block
inline constexpr int kGemvMaxTokens = 8;  // tokens per thread block at most

// kTokens (1, 2, 4 or 8) tokens per thread block, the partial sums of each in registers.
// Grid: (ceil(rows / kGemvWarps), ceil(tokens / kTokens)), blocks of 32 * kGemvWarps.
template <TensorType kType, int kTokens>
__global__ void __launch_bounds__(32 * kGemvWarps, 1)
    gemv_kernel(const unsigned char* __restrict__ w, int rows, int cols,
                const float* __restrict__ x, const BlockQ8_1* __restrict__ xq, int tokens,
                float* __restrict__ y) {
  const int row = blockIdx.x * kGemvWarps + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp; no block-wide barrier follows
  const int lane = threadIdx.x % 32;
  const int token0 = blockIdx.y * kTokens;
  const int count = min(kTokens, tokens - token0);
  const unsigned char* w_row = w + static_cast<long long>(row) * weight_row_bytes(kType, cols);
  float* y_row = y + static_cast<long long>(token0) * rows + row;
  float acc[kTokens];
  TERN_MATMUL_UNROLL
  for (int t = 0; t < kTokens; ++t) acc[t] = 0.0f;

  if constexpr (reads_q8_1_activations(kType)) {
    using Ops = ChunkOps<kType>;
    const int chunks = cols / 32;
    // Quad `quad` (lanes 4 quad .. 4 quad + 3) takes chunks quad, quad + 8, quad + 16, ... in
    // that order, one quarter per lane: slot `quad`, held alike by the quad's four lanes. A warp
    // reads 8 consecutive blocks at a time.
    const int quad = lane / 4, quarter = lane % 4;
    // Four of the quad's chunks at a time: their weights are loaded together, so that four
    // reads are in flight, then added to the slot one after another.
    constexpr int kChunksInFlight = 4;
    for (int base = 0; base < chunks; base += kChunksInFlight * kChunkSlots) {
      Quarter parts[kChunksInFlight];
      typename Ops::Scales scales[kChunksInFlight];
      TERN_MATMUL_UNROLL
      for (int j = 0; j < kChunksInFlight; ++j) {
        const int chunk = base + kChunkSlots * j + quad;
        parts[j] = {{0, 0}, 0};
        scales[j] = {};
        if (chunk < chunks) {
          parts[j] = Ops::quarter(w_row, chunk, quarter);
          scales[j] = Ops::scales(w_row, chunk);
        }
      }
      TERN_MATMUL_UNROLL
      for (int j = 0; j < kChunksInFlight; ++j) {
        if (base + kChunkSlots * j >= chunks) break;  // the same for the whole warp
        const int chunk = base + kChunkSlots * j + quad;
        add_chunk_quarter<kType>(parts[j], scales[j], chunk < chunks, xq, token0, count, chunks,
                                 chunk, quarter, acc);
      }
    }
    store_gemv_sums<true>(acc, count, y_row, rows);
  } else {
    for (int k = lane; k < cols; k += kFloatSlots) {
      const float weight = weight_at<kType>(w_row, k);
      TERN_MATMUL_UNROLL
      for (int t = 0; t < kTokens; ++t) {
        if (t < count)
          acc[t] = fmaf(weight, x[static_cast<long long>(token0 + t) * cols + k], acc[t]);
      }
    }
    store_gemv_sums<false>(acc, count, y_row, rows);
  }
}

TERN_CUDA_NAMESPACE_END
