#pragma once

// The arithmetic of the CUDA GEMV (gemv_kernel.cuh) and GEMM (gemm_kernel.cuh), shared by both
// so that every output element gets the same bits from either kernel and in any batch.
//
// Canonical reduction order of y[t][r] = dot(W[r], x[t]):
// - Integer formats (Q8_0, Q4_0, Q4_K, Q6_K) go in chunks of 32 columns, one Q8_1 activation
//   block each (a Q4_K sub-block, two Q6_K sub-blocks). A chunk's integer dot is exact, so how it
//   is computed (dp4a in a lane, four lanes' quarters, a tensor-core mma) does not matter; it
//   enters the float result as one or two fmaf with the scales (ChunkOps<type>::accumulate).
//   Slot q (0..kChunkSlots - 1 = 7) accumulates chunks q, q + 8, q + 16, ... in that order from
//   +0, and the 8 slot sums are combined by quad_slots_sum's tree: slots 4 apart, then 2, then 1.
//   Eight slots are what both kernels hold: the GEMV's eight lane quads (a quad per chunk, four
//   lanes a quarter each), and the tensor-core GEMM's eight warps (a warp per slot, each with the
//   whole output tile's accumulators for its slot).
// - Float formats (F32, F16, BF16): slot s (0..kFloatSlots - 1 = 31) accumulates
//   fmaf(w[k], x[k], acc) over the columns k = s, s + 32, ... in that order from +0, and the 32
//   slot sums are combined by the butterfly of warp_sum (offsets 16, 8, 4, 2, 1). Both kernels
//   put slot s in lane s.
// Only explicit fmaf is used, so nvcc's contraction of a * b + c cannot make the kernels differ.

#include "kernels/cpu/quant_blocks.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/matmul_types.h"
#include "kernels/simt/portable.h"

#if defined(__CUDACC__)
#define TERN_MATMUL_UNROLL _Pragma("unroll")
#else
#define TERN_MATMUL_UNROLL
#endif

TERN_CUDA_NAMESPACE_BEGIN

inline constexpr int kFloatSlots = 32;  // float formats: partial sums per output, one per lane
inline constexpr int kChunkSlots = 8;   // integer formats: partial sums per output

// The canonical combination of the 32 slot sums of a float format; every lane gets the same bits
// (a + b == b + a).
__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// The canonical combination of the 8 slot sums of an integer format, slot q held alike by the
// four lanes 4q..4q+3 of quad q: pairs 4 slots apart, then 2, then 1 (quads 4, 2, 1 apart: lanes
// 16, 8, 4 apart). Every lane gets the same bits.
__device__ __forceinline__ float quad_slots_sum(float slot) {
  for (int offset = 16; offset >= 4; offset /= 2)
    slot += __shfl_xor_sync(0xffffffffu, slot, offset);
  return slot;
}

// A 32-bit word from a 2-byte aligned address (blocks of 34, 18 and 210 bytes).
__device__ __forceinline__ unsigned load_u32_halves(const unsigned char* p) {
  return static_cast<unsigned>(load_aligned<unsigned short>(p)) |
         static_cast<unsigned>(load_aligned<unsigned short>(p + 2)) << 16;
}

__device__ __forceinline__ float load_f16(const unsigned char* p) {
  return __half2float(__ushort_as_half(load_aligned<unsigned short>(p)));
}

// A chunk's integer dot is computed in quarters: quarter s (0..3) multiplies eight weights of
// the chunk with two words (eight quants) of its Q8_1 block, words x_word(s, 0) and x_word(s, 1).
// The GEMV gives each quarter to one lane of a quad (coalesced weight loads) and adds the four
// with integer shuffles; the GEMM adds them in one lane. Integer sums are exact, so both get the
// same chunk total, which enters the float result through ChunkOps<type>::accumulate.
struct Quarter {
  int w[2];   // packed signed weight bytes (unsigned nibbles for Q4_0 and Q4_K)
  int scale;  // Q6_K's sub-block scale, 1 otherwise
};

__device__ __forceinline__ int quarter_dot(const Quarter& q, int x0, int x1) {
  return q.scale * __dp4a(q.w[1], x1, __dp4a(q.w[0], x0, 0));
}

template <TensorType kType>
struct ChunkOps;

// value = d * q, q signed bytes.
template <>
struct ChunkOps<TensorType::q8_0> {
  struct Scales {
    float d;
  };
  __device__ static constexpr int x_word(int quarter, int i) { return 2 * quarter + i; }
  __device__ static __forceinline__ Scales scales(const unsigned char* row, int chunk) {
    return {load_f16(row + chunk * 34)};
  }
  __device__ static __forceinline__ Quarter quarter(const unsigned char* row, int chunk, int s) {
    const unsigned char* qs = row + chunk * 34 + 2 + 8 * s;
    return {{static_cast<int>(load_u32_halves(qs)), static_cast<int>(load_u32_halves(qs + 4))}, 1};
  }
  __device__ static __forceinline__ float accumulate(const Scales& w, int dot, float xd, int,
                                                     float acc) {
    return fmaf(static_cast<float>(dot), w.d * xd, acc);
  }
};

// value = d * (q - 8): element i < 16 is the low nibble of byte i, i + 16 the high nibble, so
// quarter s takes bytes 4s..4s+3 with quant words s and s + 4.
template <>
struct ChunkOps<TensorType::q4_0> {
  struct Scales {
    float d;
  };
  __device__ static constexpr int x_word(int quarter, int i) { return quarter + 4 * i; }
  __device__ static __forceinline__ Scales scales(const unsigned char* row, int chunk) {
    return {load_f16(row + chunk * 18)};
  }
  __device__ static __forceinline__ Quarter quarter(const unsigned char* row, int chunk, int s) {
    const unsigned bytes = load_u32_halves(row + chunk * 18 + 2 + 4 * s);
    return {{static_cast<int>(bytes & 0x0F0F0F0Fu), static_cast<int>((bytes >> 4) & 0x0F0F0F0Fu)},
            1};
  }
  __device__ static __forceinline__ float accumulate(const Scales& w, int dot, float xd, int xsum,
                                                     float acc) {
    return fmaf(static_cast<float>(dot - 8 * xsum), w.d * xd, acc);
  }
};

// Chunk j of a super-block is sub-block j: value = d * scale_j * q - dmin * min_j, q a nibble of
// qs[32 * (j / 2) + l] (low for even j).
template <>
struct ChunkOps<TensorType::q4_k> {
  struct Scales {
    float d;
    float dmin;
    int scale;
    int min;
  };
  __device__ static constexpr int x_word(int quarter, int i) { return 2 * quarter + i; }
  __device__ static __forceinline__ Scales scales(const unsigned char* row, int chunk) {
    const unsigned char* block = row + (chunk / 8) * 144;
    Scales w;
    w.d = load_f16(block);
    w.dmin = load_f16(block + 2);
    q4_k_scale_min(chunk % 8, block + 4, w.scale, w.min);
    return w;
  }
  __device__ static __forceinline__ Quarter quarter(const unsigned char* row, int chunk, int s) {
    const int j = chunk % 8, shift = 4 * (j % 2);
    const uint2 bytes = load_aligned<uint2>(row + (chunk / 8) * 144 + 16 + 32 * (j / 2) + 8 * s);
    return {{static_cast<int>((bytes.x >> shift) & 0x0F0F0F0Fu),
             static_cast<int>((bytes.y >> shift) & 0x0F0F0F0Fu)},
            1};
  }
  __device__ static __forceinline__ float accumulate(const Scales& w, int dot, float xd, int xsum,
                                                     float acc) {
    acc = fmaf(static_cast<float>(w.scale * dot), w.d * xd, acc);
    return fmaf(static_cast<float>(w.min * xsum), -(w.dmin * xd), acc);
  }
};

// Chunk j of a super-block holds sub-blocks 2j and 2j + 1: value = d * scale * (q - 32), q six
// bits from ql (low four) and qh (high two); see BlockQ6K. Quarter s lies in sub-block 2j + s / 2,
// so its dot is already scaled.
template <>
struct ChunkOps<TensorType::q6_k> {
  struct Scales {
    float d;
  };
  __device__ static constexpr int x_word(int quarter, int i) { return 2 * quarter + i; }
  __device__ static __forceinline__ Scales scales(const unsigned char* row, int chunk) {
    return {load_f16(row + (chunk / 8) * 210 + 208)};
  }
  // Bytes 0..63 minus 32, as two's complement bytes: flip bit 5, then copy the new bit 5 into
  // bits 6 and 7 (no carries cross bytes).
  __device__ static __forceinline__ int minus_32(unsigned q) {
    const unsigned flipped = q ^ 0x20202020u;
    const unsigned sign = flipped & 0x20202020u;
    return static_cast<int>(flipped | (sign << 1) | (sign << 2));
  }
  __device__ static __forceinline__ Quarter quarter(const unsigned char* row, int chunk, int s) {
    const unsigned char* block = row + (chunk / 8) * 210;
    const int j = chunk % 8, n = j / 4, k = j % 4;
    Quarter q;
    TERN_MATMUL_UNROLL
    for (int i = 0; i < 2; ++i) {
      const unsigned low_bytes = load_u32_halves(block + 64 * n + 32 * (k & 1) + 8 * s + 4 * i);
      const unsigned high_bytes = load_u32_halves(block + 128 + 32 * n + 8 * s + 4 * i);
      const unsigned low = (k < 2 ? low_bytes : low_bytes >> 4) & 0x0F0F0F0Fu;
      const unsigned high = ((high_bytes >> (2 * k)) & 0x03030303u) << 4;
      q.w[i] = minus_32(low | high);
    }
    q.scale = static_cast<signed char>(block[192 + 2 * j + s / 2]);
    return q;
  }
  __device__ static __forceinline__ float accumulate(const Scales& w, int dot, float xd, int,
                                                     float acc) {
    return fmaf(static_cast<float>(dot), w.d * xd, acc);
  }
};

// Element k of a float-format weight row.
template <TensorType kType>
__device__ __forceinline__ float weight_at(const unsigned char* row, int k) {
  if constexpr (kType == TensorType::f32) {
    return reinterpret_cast<const float*>(row)[k];
  } else if constexpr (kType == TensorType::f16) {
    return __half2float(__ushort_as_half(reinterpret_cast<const unsigned short*>(row)[k]));
  } else {
    return __bfloat162float(__ushort_as_bfloat16(reinterpret_cast<const unsigned short*>(row)[k]));
  }
}

TERN_CUDA_NAMESPACE_END
