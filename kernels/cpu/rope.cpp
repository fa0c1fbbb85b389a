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

// YaRN's correction range in dimension units: [low, high] with, for dimension index i < dim/2,
// ramp(i) = clamp((i - low) / (high - low), 0, 1) the share of the interpolated frequency. HF
// clamps low from below and high from above only; fmax/fmin also turn the NaNs of nonsense
// parameters (a non-positive context or beta) into a bound, so nothing downstream is undefined.
struct YarnRamp {
  double low;
  double high;

  double at(std::size_t i) const {
    return std::fmin(std::fmax((static_cast<double>(i) - low) / (high - low), 0.0), 1.0);
  }
};

YarnRamp yarn_ramp(int rotary_dim, double theta, const RopeScaling& scaling) {
  // The dimension whose frequency turns `rotations` times over the original context.
  const auto correction_dim = [&](double rotations) {
    return rotary_dim *
           std::log(scaling.original_max_position / (rotations * 2 * std::numbers::pi)) /
           (2 * std::log(theta));
  };
  YarnRamp ramp{std::fmax(std::floor(correction_dim(scaling.beta_fast)), 0.0),
                std::fmin(std::ceil(correction_dim(scaling.beta_slow)), rotary_dim - 1.0)};
  if (ramp.low == ramp.high) ramp.high += 0.001;  // HF's guard against a zero-width ramp
  return ramp;
}

double yarn_get_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

}  // namespace

double rope_attention_factor(const RopeScaling& scaling) {
  if (scaling.type != RopeScaling::Type::yarn) return 1.0;
  if (scaling.attention_factor) return *scaling.attention_factor;
  if (scaling.mscale != 0 && scaling.mscale_all_dim != 0) {
    return yarn_get_mscale(scaling.factor, scaling.mscale) /
           yarn_get_mscale(scaling.factor, scaling.mscale_all_dim);
  }
  return yarn_get_mscale(scaling.factor, 1.0);
}

double rope_softmax_scale_multiplier(const RopeScaling& scaling) {
  if (scaling.type != RopeScaling::Type::yarn || scaling.mscale_all_dim == 0) return 1.0;
  const double mscale = yarn_get_mscale(scaling.factor, scaling.mscale_all_dim);
  return mscale * mscale;
}

std::vector<float> rope_inverse_frequencies(int rotary_dim, float theta,
                                            const RopeScaling& scaling) {
  std::vector<float> frequencies(static_cast<std::size_t>(rotary_dim / 2));
  const YarnRamp ramp = scaling.type == RopeScaling::Type::yarn
                            ? yarn_ramp(rotary_dim, theta, scaling)
                            : YarnRamp{0, 1};
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
      case RopeScaling::Type::yarn: {
        const double interpolated = ramp.at(i);
        frequency = frequency / scaling.factor * interpolated + frequency * (1 - interpolated);
        break;
      }
    }
    frequencies[i] = static_cast<float>(frequency);
  }
  return frequencies;
}

void rope_angles(const std::int32_t* positions, std::int64_t tokens,
                 std::span<const float> inverse_frequencies, float magnitude, float* cosines,
                 float* sines) {
  const double scale = magnitude;  // x * 1.0 is exact, so magnitude 1 changes no bit
  const std::size_t pairs = inverse_frequencies.size();
  for (std::int64_t token = 0; token < tokens; ++token) {
    const double position = positions[token];
    float* token_cosines = cosines + token * static_cast<std::int64_t>(pairs);
    float* token_sines = sines + token * static_cast<std::int64_t>(pairs);
    for (std::size_t i = 0; i < pairs; ++i) {
      const double angle = position * static_cast<double>(inverse_frequencies[i]);
      token_cosines[i] = static_cast<float>(std::cos(angle) * scale);
      token_sines[i] = static_cast<float>(std::sin(angle) * scale);
    }
  }
}

void rotate_pairs(float* x, std::int64_t tokens, std::int64_t row_stride, int n_heads, int head_dim,
                  const float* cosines, const float* sines, std::size_t pairs, RopeLayout layout) {
  assert(static_cast<int>(2 * pairs) <= head_dim);
  // neox pairs dimension i with i + rotary_dim/2; interleaved pairs 2i with 2i+1.
  const std::size_t first_stride = layout == RopeLayout::neox ? 1 : 2;
  const std::size_t partner_offset = layout == RopeLayout::neox ? pairs : 1;
  for (std::int64_t token = 0; token < tokens; ++token) {
    const float* token_cosines = cosines + token * static_cast<std::int64_t>(pairs);
    const float* token_sines = sines + token * static_cast<std::int64_t>(pairs);
    float* row = x + token * row_stride;
    for (int head = 0; head < n_heads; ++head) {
      float* dims = row + static_cast<std::int64_t>(head) * head_dim;
      for (std::size_t i = 0; i < pairs; ++i) {
        float& first = dims[i * first_stride];
        float& second = dims[i * first_stride + partner_offset];
        const float a = first, b = second;
        first = a * token_cosines[i] - b * token_sines[i];
        second = a * token_sines[i] + b * token_cosines[i];
      }
    }
  }
}

void apply_rope(float* x, std::int64_t tokens, std::int64_t row_stride, int n_heads, int head_dim,
                const std::int32_t* positions, std::span<const float> inverse_frequencies,
                RopeLayout layout, float magnitude) {
  const std::size_t pairs = inverse_frequencies.size();
  assert(pairs <= kMaxRotaryPairs && static_cast<int>(2 * pairs) <= head_dim);
  float cosines[kMaxRotaryPairs];
  float sines[kMaxRotaryPairs];
  for (std::int64_t token = 0; token < tokens; ++token) {
    rope_angles(positions + token, 1, inverse_frequencies, magnitude, cosines, sines);
    rotate_pairs(x + token * row_stride, 1, row_stride, n_heads, head_dim, cosines, sines, pairs,
                 layout);
  }
}

}  // namespace tern::kernels
