#include "kernels/cpu/quant.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/cpu/half.h"
#include "kernels/cpu/quant_blocks.h"

namespace tern::kernels {
namespace {

// Rounds to nearest even, as the SIMD converters do, so every path quantizes identically.
int round_to_int(float value) {
  return static_cast<int>(std::nearbyint(value));
}

float max_abs(const float* x, int n) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  return amax;
}

// The value of largest magnitude, sign kept; the first one wins ties.
float signed_max_abs(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

void dequantize_q8_0(const BlockQ8_0* blocks, float* y, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    for (int i = 0; i < 32; ++i) y[b * 32 + i] = static_cast<float>(blocks[b].qs[i]) * d;
  }
}

void dequantize_q4_0(const BlockQ4_0* blocks, float* y, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    for (int i = 0; i < 16; ++i) {
      y[b * 32 + i] = static_cast<float>((blocks[b].qs[i] & 0x0F) - 8) * d;
      y[b * 32 + i + 16] = static_cast<float>((blocks[b].qs[i] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_k(const BlockQ4K* blocks, float* y, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) {
    const BlockQ4K& block = blocks[b];
    const float d = f16_to_f32(block.d);
    const float dmin = f16_to_f32(block.dmin);
    float* out = y + b * 256;
    for (int c = 0; c < 4; ++c) {
      int scale_lo = 0, min_lo = 0, scale_hi = 0, min_hi = 0;
      q4_k_scale_min(2 * c, block.scales, scale_lo, min_lo);
      q4_k_scale_min(2 * c + 1, block.scales, scale_hi, min_hi);
      const float d_lo = d * static_cast<float>(scale_lo), m_lo = dmin * static_cast<float>(min_lo);
      const float d_hi = d * static_cast<float>(scale_hi), m_hi = dmin * static_cast<float>(min_hi);
      for (int l = 0; l < 32; ++l) {
        const std::uint8_t q = block.qs[32 * c + l];
        out[64 * c + l] = d_lo * static_cast<float>(q & 0x0F) - m_lo;
        out[64 * c + 32 + l] = d_hi * static_cast<float>(q >> 4) - m_hi;
      }
    }
  }
}

// The 6-bit quant (0..63) of element e of a Q6_K block.
int q6_k_quant(const BlockQ6K& block, int e) {
  const int n = e / 128, k = (e % 128) / 32, l = e % 32;
  const std::uint8_t low_byte = block.ql[64 * n + l + 32 * (k & 1)];
  const int low = k < 2 ? (low_byte & 0x0F) : (low_byte >> 4);
  const int high = (block.qh[32 * n + l] >> (2 * k)) & 3;
  return low | (high << 4);
}

void dequantize_q6_k(const BlockQ6K* blocks, float* y, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) {
    const BlockQ6K& block = blocks[b];
    const float d = f16_to_f32(block.d);
    for (int e = 0; e < 256; ++e) {
      const float scale = d * static_cast<float>(block.scales[e / 16]);
      y[b * 256 + e] = scale * static_cast<float>(q6_k_quant(block, e) - 32);
    }
  }
}

void dequantize_q8_k(const BlockQ8K* blocks, float* y, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) {
    for (int i = 0; i < 256; ++i)
      y[b * 256 + i] = blocks[b].d * static_cast<float>(blocks[b].qs[i]);
  }
}

void quantize_q8_0(const float* x, BlockQ8_0* blocks, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) {
    const float* v = x + b * 32;
    const float d = max_abs(v, 32) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = f32_to_f16(d);
    for (int i = 0; i < 32; ++i)
      blocks[b].qs[i] = static_cast<std::int8_t>(round_to_int(v[i] * id));
  }
}

void quantize_q4_0(const float* x, BlockQ4_0* blocks, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) {
    const float* v = x + b * 32;
    // The extreme value maps to -8, the end of the range with the extra step.
    const float d = signed_max_abs(v, 32) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = f32_to_f16(d);
    for (int i = 0; i < 16; ++i) {
      const int lo = std::clamp(round_to_int(v[i] * id) + 8, 0, 15);
      const int hi = std::clamp(round_to_int(v[i + 16] * id) + 8, 0, 15);
      blocks[b].qs[i] = static_cast<std::uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_q4_k(const float* x, BlockQ4K* blocks, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) {
    const float* v = x + b * 256;
    BlockQ4K& block = blocks[b];
    // Each sub-block of 32 spans [-min, -min + 15 * scale] with min >= 0, so zero stays exact.
    float scales[8], mins[8];
    for (int j = 0; j < 8; ++j) {
      float lo = 0.0f, hi = 0.0f;
      for (int i = 0; i < 32; ++i) {
        lo = std::min(lo, v[32 * j + i]);
        hi = std::max(hi, v[32 * j + i]);
      }
      scales[j] = (hi - lo) / 15.0f;
      mins[j] = -lo;
    }
    const float d = f16_to_f32(f32_to_f16(*std::max_element(scales, scales + 8) / 63.0f));
    const float dmin = f16_to_f32(f32_to_f16(*std::max_element(mins, mins + 8) / 63.0f));
    block.d = f32_to_f16(d);
    block.dmin = f32_to_f16(dmin);
    int scale_q[8], min_q[8];
    for (int j = 0; j < 8; ++j) {
      // Round the scale up so the sub-block's range still fits in 15 steps.
      scale_q[j] = d > 0.0f ? std::clamp(static_cast<int>(std::ceil(scales[j] / d)), 0, 63) : 0;
      min_q[j] = dmin > 0.0f ? std::clamp(round_to_int(mins[j] / dmin), 0, 63) : 0;
    }
    std::memset(block.scales, 0, sizeof(block.scales));
    for (int j = 0; j < 4; ++j) {
      block.scales[j] = static_cast<std::uint8_t>(scale_q[j] | ((scale_q[j + 4] >> 4) << 6));
      block.scales[j + 4] = static_cast<std::uint8_t>(min_q[j] | ((min_q[j + 4] >> 4) << 6));
      block.scales[j + 8] =
          static_cast<std::uint8_t>((scale_q[j + 4] & 0x0F) | ((min_q[j + 4] & 0x0F) << 4));
    }
    for (int j = 0; j < 8; ++j) {
      const float step = d * static_cast<float>(scale_q[j]);
      const float offset = dmin * static_cast<float>(min_q[j]);
      const float inverse = step > 0.0f ? 1.0f / step : 0.0f;
      for (int i = 0; i < 32; ++i) {
        const int q = std::clamp(round_to_int((v[32 * j + i] + offset) * inverse), 0, 15);
        const int c = j / 2, l = i;
        std::uint8_t& byte = block.qs[32 * c + l];
        byte = static_cast<std::uint8_t>(j % 2 == 0 ? ((byte & 0xF0) | q)
                                                    : ((byte & 0x0F) | (q << 4)));
      }
    }
  }
}

void quantize_q6_k(const float* x, BlockQ6K* blocks, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) {
    const float* v = x + b * 256;
    BlockQ6K& block = blocks[b];
    // Per sub-block of 16 the extreme value maps to -32; the scales are then int8 steps of d.
    float scales[16];
    float max_scale = 0.0f;
    for (int j = 0; j < 16; ++j) {
      scales[j] = signed_max_abs(v + 16 * j, 16) / -32.0f;
      max_scale = std::max(max_scale, std::fabs(scales[j]));
    }
    const float d = f16_to_f32(f32_to_f16(max_scale / 127.0f));
    block.d = f32_to_f16(d);
    std::memset(block.ql, 0, sizeof(block.ql));
    std::memset(block.qh, 0, sizeof(block.qh));
    for (int j = 0; j < 16; ++j) {
      const int scale_q = d > 0.0f ? std::clamp(round_to_int(scales[j] / d), -127, 127) : 0;
      block.scales[j] = static_cast<std::int8_t>(scale_q);
      const float step = d * static_cast<float>(scale_q);
      const float inverse = step != 0.0f ? 1.0f / step : 0.0f;
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * j + i;
        const int q = std::clamp(round_to_int(v[e] * inverse), -32, 31) + 32;
        const int n = e / 128, k = (e % 128) / 32, l = e % 32;
        std::uint8_t& low_byte = block.ql[64 * n + l + 32 * (k & 1)];
        low_byte |= static_cast<std::uint8_t>(k < 2 ? (q & 0x0F) : ((q & 0x0F) << 4));
        block.qh[32 * n + l] |= static_cast<std::uint8_t>((q >> 4) << (2 * k));
      }
    }
  }
}

void quantize_q8_k(const float* x, BlockQ8K* blocks, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) {
    const float* v = x + b * 256;
    const float d = max_abs(v, 256) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = d;
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) {
        const int q = round_to_int(v[16 * j + i] * id);
        blocks[b].qs[16 * j + i] = static_cast<std::int8_t>(q);
        sum += q;
      }
      blocks[b].bsums[j] = static_cast<std::int16_t>(sum);
    }
  }
}

}  // namespace

void dequantize_row(TensorType type, const void* src, float* dst, std::int64_t n) {
  const std::int64_t block = tensor_type_traits(type).block_elements;
  assert(n % block == 0);
  const std::int64_t count = n / block;
  switch (type) {
    case TensorType::f32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return;
    case TensorType::f16:
      for (std::int64_t i = 0; i < n; ++i) {
        dst[i] = f16_to_f32(static_cast<const std::uint16_t*>(src)[i]);
      }
      return;
    case TensorType::bf16:
      for (std::int64_t i = 0; i < n; ++i) {
        dst[i] = bf16_to_f32(static_cast<const std::uint16_t*>(src)[i]);
      }
      return;
    case TensorType::q8_0:
      return dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, count);
    case TensorType::q4_0:
      return dequantize_q4_0(static_cast<const BlockQ4_0*>(src), dst, count);
    case TensorType::q4_k:
      return dequantize_q4_k(static_cast<const BlockQ4K*>(src), dst, count);
    case TensorType::q6_k:
      return dequantize_q6_k(static_cast<const BlockQ6K*>(src), dst, count);
    case TensorType::q8_k:
      return dequantize_q8_k(static_cast<const BlockQ8K*>(src), dst, count);
    default:
      assert(false && "dequantize_row: unsupported type");
  }
}

bool quantize_row(TensorType type, const float* src, void* dst, std::int64_t n) {
  const std::int64_t block = tensor_type_traits(type).block_elements;
  if (n < 0 || n % block != 0) return false;
  const std::int64_t count = n / block;
  switch (type) {
    case TensorType::f32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return true;
    case TensorType::f16:
      for (std::int64_t i = 0; i < n; ++i) static_cast<std::uint16_t*>(dst)[i] = f32_to_f16(src[i]);
      return true;
    case TensorType::bf16:
      for (std::int64_t i = 0; i < n; ++i)
        static_cast<std::uint16_t*>(dst)[i] = f32_to_bf16(src[i]);
      return true;
    case TensorType::q8_0:
      quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), count);
      return true;
    case TensorType::q4_0:
      quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), count);
      return true;
    case TensorType::q4_k:
      quantize_q4_k(src, static_cast<BlockQ4K*>(dst), count);
      return true;
    case TensorType::q6_k:
      quantize_q6_k(src, static_cast<BlockQ6K*>(dst), count);
      return true;
    case TensorType::q8_k:
      quantize_q8_k(src, static_cast<BlockQ8K*>(dst), count);
      return true;
    default:
      return false;
  }
}

bool is_matmul_supported(TensorType type) {
  switch (type) {
    case TensorType::f32:
    case TensorType::f16:
    case TensorType::bf16:
    case TensorType::q8_0:
    case TensorType::q4_0:
    case TensorType::q4_k:
    case TensorType::q6_k:
      return true;
    default:
      return false;
  }
}

}  // namespace tern::kernels
