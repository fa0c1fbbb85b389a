#pragma once

#include <bit>
#include <cstdint>

namespace tern::kernels {

// Scalar IEEE half (f16) and bfloat16 conversions, bit-exact with what F16C/AVX-512 hardware does
// (round to nearest even, NaN stays NaN), so a value stored by scalar code and read back by SIMD
// code (or the reverse) is the same number. SIMD kernels convert with intrinsics instead: keep
// these out of *_avx2.cpp / *_avx512.cpp files, whose inline copies would carry wider instructions.

inline float f16_to_f32(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1fu;
  const std::uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24 is exact in float.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return sign != 0 ? -magnitude : magnitude;
}

inline std::uint16_t f32_to_f16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;   // NaN, quieted
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round to infinity
  if (magnitude >= 0x38800000u) {
    // Normal half: rebias the exponent (127 -> 15) and round the mantissa to 10 bits; a carry out
    // of the mantissa correctly bumps the exponent.
    const std::uint32_t rebased = magnitude - 0x38000000u;
    const std::uint32_t rounding = 0xfffu + ((rebased >> 13) & 1u);
    return sign | static_cast<std::uint16_t>((rebased + rounding) >> 13);
  }
  if (magnitude <= 0x33000000u) return sign;  // at most half of the smallest subnormal: +-0
  // Subnormal half: count units of 2^-24, rounding to nearest even.
  const std::uint32_t exponent = magnitude >> 23;
  const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126 - exponent;
  std::uint32_t units = mantissa >> shift;
  const std::uint32_t remainder = mantissa & ((1u << shift) - 1);
  const std::uint32_t halfway = 1u << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (units & 1u) != 0)) ++units;
  return sign | static_cast<std::uint16_t>(units);
}

inline float bf16_to_f32(std::uint16_t value) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value) << 16);
}

inline std::uint16_t f32_to_bf16(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

}  // namespace tern::kernels
