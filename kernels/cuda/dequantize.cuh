#pragma once

// Device-side dequantization of single elements of the GGUF weight formats (block layouts in
// kernels/cpu/quant_blocks.h), shared by the CUDA kernels that read weights. Each formula is the
// CPU's (kernels/cpu/quant.cpp, dequantize_row) operation for operation, so a kernel gets the
// same bits: every product here is exact in float (a half scale has 11 significant bits, the
// 6-bit K-quant scales and the 4/8-bit quants fit beside them in 24) except Q6_K's last
// product, which both sides round once, and Q4_K's final subtraction, likewise rounded once.
// An FMA contraction of Q4_K's d * q - m gives the same bits, as the product is exact.

#include <cstdint>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/weight_formats.h"
#include "kernels/simt/portable.h"
#include "kernels/tensor_type.h"

TERN_CUDA_NAMESPACE_BEGIN

__device__ __forceinline__ float f16_bits_to_float(std::uint16_t bits) {
  return __half2float(__ushort_as_half(bits));
}

__device__ __forceinline__ float bf16_bits_to_float(std::uint16_t bits) {
  return __bfloat162float(__ushort_as_bfloat16(bits));
}

// Element i (0..31) of a Q8_0 block: qs[i] * d.
__device__ __forceinline__ float dequantize_q8_0(const BlockQ8_0& block, int i) {
  return static_cast<float>(block.qs[i]) * f16_bits_to_float(block.d);
}

// Element i (0..31) of a Q4_0 block: (q - 8) * d, q the low nibble of qs[i] for i < 16, the
// high nibble of qs[i - 16] otherwise.
__device__ __forceinline__ float dequantize_q4_0(const BlockQ4_0& block, int i) {
  const int q = i < 16 ? (block.qs[i] & 0x0F) : (block.qs[i - 16] >> 4);
  return static_cast<float>(q - 8) * f16_bits_to_float(block.d);
}

// Element e (0..255) of a Q4_K super-block: d * scale[j] * q - dmin * min[j] for its sub-block j.
__device__ __forceinline__ float dequantize_q4_k(const BlockQ4K& block, int e) {
  const int chunk = e / 64, high = (e / 32) & 1, l = e % 32;
  int scale = 0, min = 0;
  q4_k_scale_min(2 * chunk + high, block.scales, scale, min);
  const float d = f16_bits_to_float(block.d) * static_cast<float>(scale);
  const float m = f16_bits_to_float(block.dmin) * static_cast<float>(min);
  const std::uint8_t packed = block.qs[32 * chunk + l];
  const int q = high != 0 ? (packed >> 4) : (packed & 0x0F);
  return d * static_cast<float>(q) - m;
}

// Element e (0..255) of a Q6_K super-block: d * scales[e / 16] * (q - 32), q six bits from ql and
// qh as the layout comment in quant_blocks.h describes.
__device__ __forceinline__ float dequantize_q6_k(const BlockQ6K& block, int e) {
  const int half = e / 128, k = (e % 128) / 32, l = e % 32;
  const std::uint8_t low_byte = block.ql[64 * half + l + 32 * (k & 1)];
  const int low = k < 2 ? (low_byte & 0x0F) : (low_byte >> 4);
  const int high = (block.qh[32 * half + l] >> (2 * k)) & 3;
  const float scale = f16_bits_to_float(block.d) * static_cast<float>(block.scales[e / 16]);
  return scale * static_cast<float>((low | (high << 4)) - 32);
}

// Element e of a row of kType starting at `row` (global memory, aligned as GGUF data: 2 bytes
// for the 16-bit and block formats, 4 for F32).
template <TensorType kType>
__device__ __forceinline__ float dequantize_element(const void* row, int e) {
  if constexpr (kType == TensorType::f32) {
    return static_cast<const float*>(row)[e];
  } else if constexpr (kType == TensorType::f16) {
    return f16_bits_to_float(static_cast<const std::uint16_t*>(row)[e]);
  } else if constexpr (kType == TensorType::bf16) {
    return bf16_bits_to_float(static_cast<const std::uint16_t*>(row)[e]);
  } else if constexpr (kType == TensorType::q8_0) {
    return dequantize_q8_0(static_cast<const BlockQ8_0*>(row)[e / kQ8_0Block], e % kQ8_0Block);
  } else if constexpr (kType == TensorType::q4_0) {
    return dequantize_q4_0(static_cast<const BlockQ4_0*>(row)[e / kQ4_0Block], e % kQ4_0Block);
  } else if constexpr (kType == TensorType::q4_k) {
    return dequantize_q4_k(static_cast<const BlockQ4K*>(row)[e / kSuperBlock], e % kSuperBlock);
  } else {
    static_assert(kType == TensorType::q6_k, "no device dequantization for this format");
    return dequantize_q6_k(static_cast<const BlockQ6K*>(row)[e / kSuperBlock], e % kSuperBlock);
  }
}

TERN_CUDA_NAMESPACE_END
