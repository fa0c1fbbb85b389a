#include "kernels/cpu/rope.h"

#include <cassert>
#include <cmath>
#include <numbers>

namespace tern::kernels {
namespace {

// Per-token cos/sin tables live on the stack; this bounds rotary_dim at 1024.
constexpr std::size_t kMaxRotaryPairs = 512;

double llama3_scaled(double inverse_frequency, const RopeScaling& scaling) {
  const double low_freq_wavelength = scaling.original_max_position / scaling.low_freq_factor;
  const double high_freq_wavelength = scaling.original_max_position / scaling.high_freq_factor;
  const double wavelength = 2 * std::numbers::pi / inverse_frequency;
  if (wavelength < high_freq_wavelength) return inverse_frequency;
  if (wavelength > low_freq_wavelength) return inverse_frequency / scaling.factor;
  const double smooth = (scaling.original_max_position / wavelength - scaling.low_freq_factor) /
                        (scaling.high_freq_factor - scaling.low_freq_factor);
  return (1 - smooth) * inverse_frequency / scaling.factor + smooth * inverse_frequency;
}

}  // namespace

std::vector<float> rope_inverse_frequencies(int rotary_dim, float theta,
                                            const RopeScaling& scaling) {
  std::vector<float> frequencies(static_cast<std::size_t>(rotary_dim / 2));
  for (std::size_t i = 0; i < frequencies.size(); ++i) {
    double frequency = std::pow(static_cast<double>(theta),
                                -2.0 * static_cast<double>(i) / static_cast<double>(rotary_dim));
    switch (scaling.type) {
      case RopeScaling::Type::none:
        break;
      case RopeScaling::Type::linear:
        frequency /= scaling.factor;
        break;
      case RopeScaling::Type::llama3:
        frequency = llama3_scaled(frequency, scaling);
        break;
    }
    frequencies[i] = static_cast<float>(frequency);
  }
  return frequencies;
}

void apply_rope(float* x, std::int64_t tokens, std::int64_t row_stride, int n_heads, int head_dim,
                const std::int32_t* positions, std::span<const float> inverse_frequencies,
                RopeLayout layout) {
  const std::size_t pairs = inverse_frequencies.size();
  assert(pairs <= kMaxRotaryPairs && static_cast<int>(2 * pairs) <= head_dim);
  float cosines[kMaxRotaryPairs];
  float sines[kMaxRotaryPairs];
  // neox pairs dimension i with i + rotary_dim/2; interleaved pairs 2i with 2i+1.
  const std::size_t first_stride = layout == RopeLayout::neox ? 1 : 2;
  const std::size_t partner_offset = layout == RopeLayout::neox ? pairs : 1;
  for (std::int64_t token = 0; token < tokens; ++token) {
    const double position = positions[token];
    for (std::size_t i = 0; i < pairs; ++i) {
      const double angle = position * static_cast<double>(inverse_frequencies[i]);
      cosines[i] = static_cast<float>(std::cos(angle));
      sines[i] = static_cast<float>(std::sin(angle));
    }
    float* row = x + token * row_stride;
    for (int head = 0; head < n_heads; ++head) {
      float* dims = row + static_cast<std::int64_t>(head) * head_dim;
      for (std::size_t i = 0; i < pairs; ++i) {
        float& first = dims[i * first_stride];
        float& second = dims[i * first_stride + partner_offset];
        const float a = first, b = second;
        first = a * cosines[i] - b * sines[i];
        second = a * sines[i] + b * cosines[i];
      }
    }
  }
}

}  // namespace tern::kernels
