#pragma once

// The decode GEMV of Q8_0 and Q4_0 rows that start 16-byte aligned (whole groups of 8 blocks),
// shared source (nvcc via gemv.cu, the host compiler against the SIMT emulator). Blocks of 34 and
// 18 bytes leave a lane no wider load than two bytes in place, so each warp streams its row
// through shared memory instead: 16-byte cp.async copies, which fill whole 512-byte lines, in a
// ring of kGemvStages segments of 32 blocks with the next segments in flight while one is
// computed. Lane quad q then takes blocks q, q + 8, ... of each segment, a quarter per lane, as
// gemv_kernel does from global memory: slot q of matmul_chunks.cuh's canonical order, so a row
// gets the bits gemv_kernel and the GEMM give it.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/gemv_kernel.cuh"
#include "kernels/cuda/matmul_chunks.cuh"
#include "kernels/cuda/matmul_types.h"
#include "kernels/cuda/weight_formats.h"
#include "kernels/simt/async_copy.h"

TERN_CUDA_NAMESPACE_BEGIN

inline constexpr int kGemvStagedWarps = 4;  // rows per thread block
inline constexpr int kGemvStages = 4;       // segments of 32 blocks per warp: 3 in flight

// kTokens (1, 2, 4 or 8) tokens per thread block. Grid: (ceil(rows / kGemvStagedWarps),
// ceil(tokens / kTokens)), blocks of 32 * kGemvStagedWarps; gemv_stages_rows must hold.
template <TensorType kType, int kTokens>
__global__ void __launch_bounds__(32 * kGemvStagedWarps, 4)
    gemv_staged_kernel(const unsigned char* __restrict__ w, int rows, int cols,
                       const BlockQ8_1* __restrict__ xq, int tokens, float* __restrict__ y) {
  static_assert(gemv_stages_format(kType), "the staged GEMV reads Q8_0 and Q4_0");
  constexpr int kBlockHalves = WeightFormat<kType>::kBlockBytes / 2;  // 17 or 9
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
  // A 32-bit word of the staged bytes from two halves (blocks are only 2-byte aligned).
  const auto word_at = [&](int half) {
    return static_cast<int>(static_cast<unsigned>(staged[half]) |
                            static_cast<unsigned>(staged[half + 1]) << 16);
  };

  float acc[kTokens];
  TERN_MATMUL_UNROLL
  for (int t = 0; t < kTokens; ++t) acc[t] = 0.0f;
  // As in gemv_kernel: quad `quad` takes chunks quad, quad + 8, ... (slot `quad`), a quarter per
  // lane, here read from the staged segment.
  const int quad = lane / 4, quarter = lane % 4;
  TERN_MATMUL_UNROLL
  for (int s = 0; s < kGemvStages - 1; ++s) start(s);
  for (int segment = 0; segment < segments; ++segment) {
    // Into the slot the previous iteration read (and left behind its closing __syncwarp).
    start(segment + kGemvStages - 1);
    cp_async_wait_group<kGemvStages - 1>();  // this lane's copies of `segment` have landed
    __syncwarp();                            // and every lane's
    const int slot = ring + segment % kGemvStages * kSegmentHalves;
    TERN_MATMUL_UNROLL
    for (int j = 0; j < 32 / kChunkSlots; ++j) {
      const int in_segment = kChunkSlots * j + quad;
      const int chunk = 32 * segment + in_segment;
      if (32 * segment + kChunkSlots * j >= chunks) break;  // the same for the whole warp
      // Rows are whole groups of 8 blocks, so the 8 chunks of step j all exist.
      const int block = slot + in_segment * kBlockHalves;
      const typename ChunkOps<kType>::Scales scales{
          __half2float(__ushort_as_half(static_cast<unsigned short>(staged[block])))};
      Quarter part;
      part.scale = 1;
      if constexpr (kType == TensorType::q8_0) {  // bytes 8s..8s+7 of the quants
        part.w[0] = word_at(block + 1 + 4 * quarter);
        part.w[1] = word_at(block + 3 + 4 * quarter);
      } else {  // bytes 4s..4s+3: their low nibbles, then their high ones
        const int bytes = word_at(block + 1 + 2 * quarter);
        part.w[0] = bytes & 0x0F0F0F0F;
        part.w[1] = (bytes >> 4) & 0x0F0F0F0F;
      }
      add_chunk_quarter<kType>(part, scales, true, xq, token0, count, chunks, chunk, quarter, acc);
    }
    __syncwarp();  // the slot is read before a later start copies over it
  }
  store_gemv_sums<true>(acc, count, y + static_cast<long long>(token0) * rows + row, rows);
}

TERN_CUDA_NAMESPACE_END
