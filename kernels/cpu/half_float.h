#pragma once

#include <bit>
#include <cstdint>

namespace tern::kernels {

// IEEE binary16 and bfloat16 conversions in plain integer code, for baseline x86-64 without
// F16C. Both directions round to nearest even and keep infinities and NaNs.

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);
    // Subnormal: value = mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline std::uint16_t float_to_half(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (abs_bits >= 0x7F800000u) {  // inf or NaN
    const std::uint16_t nan_bit = abs_bits > 0x7F800000u ? 0x200 : 0;
    return static_cast<std::uint16_t>(sign | 0x7C00u | nan_bit);
  }
  if (abs_bits >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow
  if (abs_bits < 0x38800000u) {
    // Subnormal half (or zero): round |f| / 2^-24 to an integer, nearest even.
    const float scaled = std::bit_cast<float>(abs_bits) * 0x1p24f;
    auto integer = static_cast<std::uint32_t>(scaled);
    const float rest = scaled - static_cast<float>(integer);
    if (rest > 0.5f || (rest == 0.5f && (integer & 1u))) ++integer;
    return static_cast<std::uint16_t>(sign | integer);
  }
  const std::uint32_t rounded =
      abs_bits + 0xFFFu + ((abs_bits >> 13) & 1u);  // round to nearest even at bit 13
  return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

inline float bf16_to_float(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40);
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace tern::kernels
