#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace tern::kernels {

// GGML's block layouts, byte for byte, so GGUF weights are used in place. Scales are IEEE halves
// stored as raw bits (see half.h). CUDA kernels include this too (kernels/cuda/).

inline constexpr int kQ8_0Block = 32;
inline constexpr int kQ4_0Block = 32;
inline constexpr int kSuperBlock = 256;  // QK_K

struct BlockQ8_0 {
  std::uint16_t d;
  std::int8_t qs[32];  // value = qs[i] * d
};

// Element i < 16 is the low nibble of qs[i], element i + 16 the high nibble; value = (q - 8) * d.
struct BlockQ4_0 {
  std::uint16_t d;
  std::uint8_t qs[16];
};

// Eight sub-blocks of 32. Element 64c + l (l < 32) is the low nibble of qs[32c + l] and belongs to
// sub-block 2c; element 64c + 32 + l is the high nibble and belongs to sub-block 2c + 1.
// value = d * scale[j] * q - dmin * min[j], with 6-bit scale and min packed in `scales`
// (see q4_k_scale_min).
struct BlockQ4K {
  std::uint16_t d;
  std::uint16_t dmin;
  std::uint8_t scales[12];
  std::uint8_t qs[128];
};

// Sixteen sub-blocks of 16, value = d * scales[e / 16] * (q - 32) with a 6-bit q. Within each
// half n of 128 elements and l < 32: element 128n + l + 32k takes its low four bits from
// ql[64n + l + 32 * (k & 1)] (low nibble for k < 2, high nibble otherwise) and its high two bits
// from bits 2k..2k+1 of qh[32n + l].
struct BlockQ6K {
  std::uint8_t ql[128];
  std::uint8_t qh[64];
  std::int8_t scales[16];
  std::uint16_t d;
};

// Activations for K-quant dot products: bsums[i] is the sum of qs[16i .. 16i + 15].
struct BlockQ8K {
  float d;
  std::int8_t qs[256];
  std::int16_t bsums[16];
};

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4K) == 144);
static_assert(sizeof(BlockQ6K) == 210);
static_assert(sizeof(BlockQ8K) == 292);

// Unpacks sub-block j's 6-bit scale and min from Q4_K's 12 packed bytes: bytes 0-3 hold scales
// 0-3 and bytes 4-7 mins 0-3 in their low six bits; scales/mins 4-7 keep their low four bits in
// the nibbles of bytes 8-11 and their top two bits in the spare high bits of bytes 0-7.
TERN_HOST_DEVICE inline void q4_k_scale_min(int j, const std::uint8_t* packed, int& scale,
                                            int& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = (packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4);
    min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

}  // namespace tern::kernels
