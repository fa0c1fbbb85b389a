#include "kernels/cpu/rope.h"

#include <gtest/gtest.h>

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
