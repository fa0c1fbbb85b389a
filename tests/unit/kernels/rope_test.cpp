#include "kernels/cpu/rope.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <random>
#include <vector>

namespace tern::kernels {
namespace {

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

TEST(RopeFrequencies, UnscaledAreThetaPowers) {
  const std::vector<float> frequencies = rope_inverse_frequencies(128, 500000.0f, {});
  ASSERT_EQ(frequencies.size(), 64u);
  for (int i = 0; i < 64; ++i) {
    const double expected = std::pow(500000.0, -2.0 * i / 128.0);
    EXPECT_NEAR(frequencies[i], expected, 1e-7 * expected) << i;
  }
}

TEST(RopeFrequencies, LinearDividesByFactor) {
  RopeScaling scaling;
  scaling.type = RopeScaling::Type::linear;
  scaling.factor = 4;
  const std::vector<float> frequencies = rope_inverse_frequencies(64, 10000.0f, scaling);
  ASSERT_EQ(frequencies.size(), 32u);
  for (int i = 0; i < 32; ++i) {
    const double expected = std::pow(10000.0, -2.0 * i / 64.0) / 4.0;
    EXPECT_NEAR(frequencies[i], expected, 1e-7 * expected) << i;
  }
}

// HF transformers' _compute_llama3_parameters, restated: keep short wavelengths, divide long ones
// by factor, blend linearly in 1/wavelength between.
double llama3_reference(double inverse_frequency, double factor, double low_freq_factor,
                        double high_freq_factor, double original_max_position) {
  const double low_freq_wavelength = original_max_position / low_freq_factor;
  const double high_freq_wavelength = original_max_position / high_freq_factor;
  const double wavelength = 2 * std::numbers::pi / inverse_frequency;
  if (wavelength < high_freq_wavelength) return inverse_frequency;
  if (wavelength > low_freq_wavelength) return inverse_frequency / factor;
  const double smooth =
      (original_max_position / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor);
  return (1 - smooth) * inverse_frequency / factor + smooth * inverse_frequency;
}

TEST(RopeFrequencies, Llama3MatchesHuggingFaceDefinition) {
  // Llama 3.1's published rope_scaling.
  RopeScaling scaling;
  scaling.type = RopeScaling::Type::llama3;
  scaling.factor = 8;
  scaling.low_freq_factor = 1;
  scaling.high_freq_factor = 4;
  scaling.original_max_position = 8192;
  const std::vector<float> frequencies = rope_inverse_frequencies(128, 500000.0f, scaling);
  ASSERT_EQ(frequencies.size(), 64u);
  int kept = 0, divided = 0, blended = 0;
  for (int i = 0; i < 64; ++i) {
    const double base = std::pow(500000.0, -2.0 * i / 128.0);
    const double expected = llama3_reference(base, 8, 1, 4, 8192);
    EXPECT_NEAR(frequencies[i], expected, 1e-6 * expected) << i;
    const double wavelength = 2 * std::numbers::pi / base;
    if (wavelength < 8192.0 / 4) {
      ++kept;
      EXPECT_NEAR(frequencies[i], base, 1e-7 * base) << i;
    } else if (wavelength > 8192.0) {
      ++divided;
      EXPECT_NEAR(frequencies[i], base / 8, 1e-7 * base) << i;
    } else {
      ++blended;
      EXPECT_LT(frequencies[i], base) << i;
      EXPECT_GT(frequencies[i], base / 8) << i;
    }
  }
  // All three regimes are exercised.
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
}

// HF transformers' _compute_yarn_parameters, restated in double: frequencies whose dimension lies
// below the correction range keep their value, those above it are divided by factor, and a linear
// ramp over the dimension index blends between.
std::vector<double> yarn_reference(int dim, double theta, double factor, double original,
                                   double beta_fast, double beta_slow) {
  const auto correction_dim = [&](double rotations) {
    return dim * std::log(original / (rotations * 2 * std::numbers::pi)) / (2 * std::log(theta));
  };
  const double low = std::max(std::floor(correction_dim(beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(beta_slow)), dim - 1.0);
  if (low == high) high += 0.001;
  std::vector<double> frequencies;
  for (int i = 0; i < dim / 2; ++i) {
    const double pos_freq = std::pow(theta, 2.0 * i / dim);
    const double extrapolation = 1 / pos_freq;
    const double interpolation = 1 / (factor * pos_freq);
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    const double extrapolation_factor = 1 - ramp;
    frequencies.push_back(interpolation * (1 - extrapolation_factor) +
                          extrapolation * extrapolation_factor);
  }
  return frequencies;
}

struct YarnCase {
  int dim;
  float theta;
  float factor;
  int original;
  float beta_fast = 32;
  float beta_slow = 1;
};

// DeepSeek-V3 (rope dim 64, theta 1e4, factor 40 over 4096), Qwen-style (128, 1e6, 4 over 32768),
// the paper's LLaMA setting with other betas, and one whose correction range clamps to a single
// dimension (low == high: the ramp's 0.001 guard). Within one float rounding of the double value.
TEST(RopeFrequencies, YarnMatchesHuggingFaceDefinition) {
  for (const YarnCase& c :
       {YarnCase{64, 10000.0f, 40, 4096}, YarnCase{128, 1000000.0f, 4, 32768},
        YarnCase{128, 10000.0f, 16, 4096, 64, 2}, YarnCase{8, 100.0f, 4, 1000000}}) {
    RopeScaling scaling;
    scaling.type = RopeScaling::Type::yarn;
    scaling.factor = c.factor;
    scaling.original_max_position = c.original;
    scaling.beta_fast = c.beta_fast;
    scaling.beta_slow = c.beta_slow;
    const std::vector<float> frequencies = rope_inverse_frequencies(c.dim, c.theta, scaling);
    const std::vector<double> expected =
        yarn_reference(c.dim, c.theta, c.factor, c.original, c.beta_fast, c.beta_slow);
    ASSERT_EQ(frequencies.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(frequencies[i], expected[i], 1e-7 * expected[i])
          << "dim " << c.dim << " factor " << c.factor << " i " << i;
    }
  }
}

// DeepSeek-V3's correction range is dimensions [10, 23): below it frequencies are unscaled, above
// it divided by 40, between strictly in between; so the comparison above covers every regime.
TEST(RopeFrequencies, YarnKeepsHighFrequenciesAndInterpolatesLowOnes) {
  RopeScaling scaling;
  scaling.type = RopeScaling::Type::yarn;
  scaling.factor = 40;
  scaling.original_max_position = 4096;
  const std::vector<float> frequencies = rope_inverse_frequencies(64, 10000.0f, scaling);
  ASSERT_EQ(frequencies.size(), 32u);
  for (int i = 0; i < 32; ++i) {
    const double base = std::pow(10000.0, -2.0 * i / 64.0);
    if (i <= 10) {
      EXPECT_NEAR(frequencies[i], base, 1e-7 * base) << i;
    } else if (i >= 23) {
      EXPECT_NEAR(frequencies[i], base / 40, 1e-7 * base / 40) << i;
    } else {
      EXPECT_LT(frequencies[i], base) << i;
      EXPECT_GT(frequencies[i], base / 40) << i;
    }
  }
}

// A config read from disk can hold anything; the frequencies stay finite rather than crash.
TEST(RopeFrequencies, YarnWithNonsenseParametersStaysFinite) {
  RopeScaling scaling;
  scaling.type = RopeScaling::Type::yarn;
  scaling.factor = 4;
  for (const int original : {0, -5, 1}) {
    for (const float beta : {0.0f, -1.0f, 32.0f}) {
      scaling.original_max_position = original;
      scaling.beta_fast = beta;
      for (const float f : rope_inverse_frequencies(16, 10000.0f, scaling)) {
        EXPECT_TRUE(std::isfinite(f)) << original << " " << beta;
      }
    }
  }
}

RopeScaling yarn(float factor, float mscale, float mscale_all_dim) {
  RopeScaling scaling;
  scaling.type = RopeScaling::Type::yarn;
  scaling.factor = factor;
  scaling.mscale = mscale;
  scaling.mscale_all_dim = mscale_all_dim;
  return scaling;
}

// Hand-computed from HF's get_mscale(s, m) = 0.1 m ln(s) + 1 (1 when s <= 1).
TEST(RopeAttentionFactor, FollowsHuggingFaceYarn) {
  // Qwen-style: no mscale keys, so 0.1 ln 4 + 1.
  EXPECT_NEAR(rope_attention_factor(yarn(4, 1, 0)), 1.138629436111989, 1e-12);
  // DeepSeek-V3: mscale == mscale_all_dim, the ratio is 1 (the scale goes to the softmax).
  EXPECT_NEAR(rope_attention_factor(yarn(40, 1, 1)), 1.0, 1e-12);
  EXPECT_NEAR(rope_attention_factor(yarn(40, 0.707f, 0.707f)), 1.0, 1e-12);
  // Differing: (0.1 ln 40 + 1) / (0.0707 ln 40 + 1).
  EXPECT_NEAR(rope_attention_factor(yarn(40, 1, 0.707f)), 1.0857263992561355, 1e-7);
  // mscale absent (0) with mscale_all_dim set: HF falls back to get_mscale(factor).
  EXPECT_NEAR(rope_attention_factor(yarn(40, 0, 1)), 1.3688879454113936, 1e-12);
  // No extension, no factor.
  EXPECT_EQ(rope_attention_factor(yarn(1, 1, 0)), 1.0);
  EXPECT_EQ(rope_attention_factor(yarn(0.5f, 1, 1)), 1.0);
  // An explicit attention_factor wins.
  RopeScaling explicit_factor = yarn(40, 1, 1);
  explicit_factor.attention_factor = 0.75f;
  EXPECT_EQ(rope_attention_factor(explicit_factor), 0.75);
  // Every other type leaves cos and sin alone.
  RopeScaling linear;
  linear.type = RopeScaling::Type::linear;
  linear.factor = 4;
  EXPECT_EQ(rope_attention_factor(linear), 1.0);
  EXPECT_EQ(rope_attention_factor({}), 1.0);
}

TEST(RopeSoftmaxScaleMultiplier, IsDeepSeekMscaleSquared) {
  // DeepSeek-V3: (0.1 ln 40 + 1)^2.
  EXPECT_NEAR(rope_softmax_scale_multiplier(yarn(40, 1, 1)), 1.8738542070926265, 1e-12);
  // DeepSeek-V2-Lite: (0.0707 ln 40 + 1)^2.
  EXPECT_NEAR(rope_softmax_scale_multiplier(yarn(40, 0.707f, 0.707f)), 1.5896261651208736, 1e-7);
  EXPECT_EQ(rope_softmax_scale_multiplier(yarn(4, 1, 0)), 1.0);  // Qwen: no mscale_all_dim
  EXPECT_EQ(rope_softmax_scale_multiplier(yarn(1, 1, 1)), 1.0);
  RopeScaling linear;
  linear.type = RopeScaling::Type::linear;
  linear.factor = 40;
  linear.mscale_all_dim = 1;
  EXPECT_EQ(rope_softmax_scale_multiplier(linear), 1.0);
  EXPECT_EQ(rope_softmax_scale_multiplier({}), 1.0);
}

// Rotation from the definition, in double: dimension pairs (a, b) -> (a cos - b sin, a sin + b cos)
// with angle position * inverse_frequency[i].
std::vector<double> rope_reference(const std::vector<float>& x, std::int64_t tokens,
                                   std::int64_t row_stride, int n_heads, int head_dim,
                                   const std::vector<std::int32_t>& positions,
                                   const std::vector<float>& frequencies, RopeLayout layout) {
  std::vector<double> y(x.begin(), x.end());
  const int pairs = static_cast<int>(frequencies.size());
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int h = 0; h < n_heads; ++h) {
      for (int i = 0; i < pairs; ++i) {
        const std::int64_t base = t * row_stride + static_cast<std::int64_t>(h) * head_dim;
        const std::int64_t first = base + (layout == RopeLayout::neox ? i : 2 * i);
        const std::int64_t second = layout == RopeLayout::neox ? first + pairs : first + 1;
        const double angle = static_cast<double>(positions[t]) * frequencies[i];
        const double a = x[first], b = x[second];
        y[first] = a * std::cos(angle) - b * std::sin(angle);
        y[second] = a * std::sin(angle) + b * std::cos(angle);
      }
    }
  }
  return y;
}

// Both layouts, full and partial rotary dims, rows with padding (as in a fused QKV buffer), and
// positions up to 10^6: within 2e-6 absolute (inputs are O(1); angles and trig are in double, so
// only float rounding of the cosines and sines and of the products remains).
TEST(ApplyRope, MatchesReferenceForBothLayouts) {
  const std::vector<std::int32_t> positions = {0, 1, 2, 17, 511, 4095, 32767, 131071, 1000000};
  const std::int64_t tokens = static_cast<std::int64_t>(positions.size());
  for (const RopeLayout layout : {RopeLayout::interleaved, RopeLayout::neox}) {
    for (const int rotary_dim : {64, 32}) {
      const int n_heads = 3, head_dim = 64;
      const std::int64_t row_stride = n_heads * head_dim + 10;
      const std::vector<float> frequencies = rope_inverse_frequencies(rotary_dim, 10000.0f, {});
      std::vector<float> x = random_floats(static_cast<std::size_t>(tokens * row_stride), 21);
      const std::vector<double> expected =
          rope_reference(x, tokens, row_stride, n_heads, head_dim, positions, frequencies, layout);
      const std::vector<float> original = x;
      apply_rope(x.data(), tokens, row_stride, n_heads, head_dim, positions.data(), frequencies,
                 layout);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const std::int64_t column = static_cast<std::int64_t>(i) % row_stride;
        if (column >= n_heads * head_dim || column % head_dim >= rotary_dim) {
          EXPECT_EQ(x[i], original[i]) << "untouched dim " << i;
        } else {
          ASSERT_NEAR(x[i], expected[i], 2e-6)
              << (layout == RopeLayout::neox ? "neox" : "interleaved")
              << " rotary_dim=" << rotary_dim << " i=" << i;
        }
      }
    }
  }
}

// The rotation before the magnitude parameter existed, restated: cos and sin of the double angle,
// each rounded to float, then float products.
std::vector<float> rope_unscaled_float(std::vector<float> x, std::int64_t tokens,
                                       std::int64_t row_stride, int n_heads, int head_dim,
                                       const std::vector<std::int32_t>& positions,
                                       const std::vector<float>& frequencies, RopeLayout layout) {
  const int pairs = static_cast<int>(frequencies.size());
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int h = 0; h < n_heads; ++h) {
      for (int i = 0; i < pairs; ++i) {
        const std::int64_t base = t * row_stride + static_cast<std::int64_t>(h) * head_dim;
        const std::int64_t first = base + (layout == RopeLayout::neox ? i : 2 * i);
        const std::int64_t second = layout == RopeLayout::neox ? first + pairs : first + 1;
        const double angle = static_cast<double>(positions[t]) * frequencies[i];
        const float c = static_cast<float>(std::cos(angle));
        const float s = static_cast<float>(std::sin(angle));
        const float a = x[first], b = x[second];
        x[first] = a * c - b * s;
        x[second] = a * s + b * c;
      }
    }
  }
  return x;
}

// Magnitude 1 (stated or defaulted) is bit for bit the rotation without one.
TEST(ApplyRope, MagnitudeOneIsTheUnscaledRotation) {
  const int n_heads = 3, head_dim = 64;
  const std::int64_t tokens = 4, row_stride = n_heads * head_dim + 6;
  const std::vector<std::int32_t> positions = {0, 7, 4096, 163839};
  const std::vector<float> frequencies = rope_inverse_frequencies(head_dim, 10000.0f, {});
  const std::vector<float> x = random_floats(static_cast<std::size_t>(tokens * row_stride), 24);
  for (const RopeLayout layout : {RopeLayout::interleaved, RopeLayout::neox}) {
    const std::vector<float> expected = rope_unscaled_float(
        x, tokens, row_stride, n_heads, head_dim, positions, frequencies, layout);
    std::vector<float> defaulted = x;
    apply_rope(defaulted.data(), tokens, row_stride, n_heads, head_dim, positions.data(),
               frequencies, layout);
    std::vector<float> one = x;
    apply_rope(one.data(), tokens, row_stride, n_heads, head_dim, positions.data(), frequencies,
               layout, 1.0f);
    EXPECT_EQ(0, std::memcmp(expected.data(), defaulted.data(), x.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(expected.data(), one.data(), x.size() * sizeof(float)));
  }
}

// HF multiplies cos and sin by YaRN's attention factor: the rotated dimensions scale by it, the
// rest are untouched. Within 4e-6 absolute of the double reference times the magnitude (inputs
// O(1), magnitude ~1.14: float rounding of cos, sin and the products).
TEST(ApplyRope, MagnitudeScalesCosAndSin) {
  const int n_heads = 2, head_dim = 64, rotary_dim = 32;
  const std::int64_t tokens = 3, row_stride = n_heads * head_dim;
  const std::vector<std::int32_t> positions = {1, 300, 50000};
  RopeScaling scaling = yarn(4, 1, 0);
  scaling.original_max_position = 2048;
  const std::vector<float> frequencies = rope_inverse_frequencies(rotary_dim, 10000.0f, scaling);
  const float magnitude = static_cast<float>(rope_attention_factor(scaling));
  ASSERT_NE(magnitude, 1.0f);
  const std::vector<float> x = random_floats(static_cast<std::size_t>(tokens * row_stride), 25);
  for (const RopeLayout layout : {RopeLayout::interleaved, RopeLayout::neox}) {
    const std::vector<double> rotated =
        rope_reference(x, tokens, row_stride, n_heads, head_dim, positions, frequencies, layout);
    std::vector<float> y = x;
    apply_rope(y.data(), tokens, row_stride, n_heads, head_dim, positions.data(), frequencies,
               layout, magnitude);
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (static_cast<std::int64_t>(i) % row_stride % head_dim >= rotary_dim) {
        EXPECT_EQ(y[i], x[i]) << "untouched dim " << i;
      } else {
        ASSERT_NEAR(y[i], rotated[i] * magnitude, 4e-6) << i;
      }
    }
  }
}

// GGUF's converter permutes each head's Q/K rows so that HF's halves interleave (new row 2i = old
// row i, new row 2i+1 = old row i + d/2); interleaved RoPE on permuted rows must then equal neox
// RoPE on the original rows, permuted the same way. The arithmetic per pair is the same, so the
// results agree bit for bit.
TEST(ApplyRope, InterleavedOnPermutedRowsEqualsNeox) {
  const int n_heads = 4, head_dim = 128;
  const std::int64_t tokens = 5, row_stride = n_heads * head_dim;
  const std::vector<std::int32_t> positions = {0, 3, 100, 2047, 9000};
  RopeScaling scaling;
  scaling.type = RopeScaling::Type::llama3;
  scaling.factor = 8;
  const std::vector<float> frequencies = rope_inverse_frequencies(head_dim, 500000.0f, scaling);
  auto permute = [&](const std::vector<float>& hf) {
    std::vector<float> gguf(hf.size());
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (int h = 0; h < n_heads; ++h) {
        const std::int64_t base = t * row_stride + static_cast<std::int64_t>(h) * head_dim;
        for (int i = 0; i < head_dim / 2; ++i) {
          gguf[base + 2 * i] = hf[base + i];
          gguf[base + 2 * i + 1] = hf[base + i + head_dim / 2];
        }
      }
    }
    return gguf;
  };
  std::vector<float> hf = random_floats(static_cast<std::size_t>(tokens * row_stride), 22);
  std::vector<float> gguf = permute(hf);
  apply_rope(hf.data(), tokens, row_stride, n_heads, head_dim, positions.data(), frequencies,
             RopeLayout::neox);
  apply_rope(gguf.data(), tokens, row_stride, n_heads, head_dim, positions.data(), frequencies,
             RopeLayout::interleaved);
  const std::vector<float> hf_permuted = permute(hf);
  EXPECT_EQ(0, std::memcmp(hf_permuted.data(), gguf.data(), gguf.size() * sizeof(float)));
}

TEST(ApplyRope, TokensAreBatchInvariant) {
  const int n_heads = 2, head_dim = 64;
  const std::int64_t tokens = 6, row_stride = n_heads * head_dim;
  const std::vector<std::int32_t> positions = {5, 6, 7, 8, 9, 10};
  const std::vector<float> frequencies = rope_inverse_frequencies(head_dim, 1000000.0f, {});
  const std::vector<float> x = random_floats(static_cast<std::size_t>(tokens * row_stride), 23);
  for (const RopeLayout layout : {RopeLayout::interleaved, RopeLayout::neox}) {
    std::vector<float> batched = x;
    apply_rope(batched.data(), tokens, row_stride, n_heads, head_dim, positions.data(), frequencies,
               layout);
    std::vector<float> single = x;
    for (std::int64_t t = 0; t < tokens; ++t) {
      apply_rope(single.data() + t * row_stride, 1, row_stride, n_heads, head_dim,
                 positions.data() + t, frequencies, layout);
    }
    EXPECT_EQ(0, std::memcmp(single.data(), batched.data(), x.size() * sizeof(float)));
  }
}

}  // namespace
}  // namespace tern::kernels
