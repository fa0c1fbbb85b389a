#include "kernels/cpu/rms_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_features.h"

namespace tern::kernels {
namespace {

using RmsNormFunction = void (*)(const float*, const float*, float*, std::int64_t, std::int64_t,
                                 float);

struct Variant {
  const char* name;
  RmsNormFunction function;
  bool supported;
};

std::vector<Variant> variants() {
  const CpuFeatures& f = cpu_features();
  return {{"scalar", rms_norm_scalar, true},
          {"avx2", rms_norm_avx2, f.avx2 && f.fma && f.f16c},
          {"avx512", rms_norm_avx512, f.has_avx512()},
          {"dispatched", rms_norm, true}};
}

std::vector<float> random_floats(std::size_t n, float scale, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

// Every variant the CPU runs, against a double-precision reference: |y - ref| <= 1e-5 * |ref| +
// 1e-6 * max|ref| per element (float rounding of a sum over the row, then two products).
TEST(RmsNorm, MatchesDoubleReferenceOnEveryVariant) {
  const float eps = 1e-5f;
  for (const std::int64_t cols : {1, 7, 8, 15, 16, 17, 63, 64, 100, 896, 4096, 4099}) {
    const std::int64_t rows = 3;
    const std::vector<float> x = random_floats(static_cast<std::size_t>(rows * cols), 2.0f, 1);
    const std::vector<float> weight = random_floats(static_cast<std::size_t>(cols), 1.0f, 2);
    std::vector<double> expected(x.size());
    double max_abs = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (std::int64_t i = 0; i < cols; ++i) sum += double{x[r * cols + i]} * x[r * cols + i];
      const double inverse_rms = 1.0 / std::sqrt(sum / static_cast<double>(cols) + eps);
      for (std::int64_t i = 0; i < cols; ++i) {
        expected[r * cols + i] = x[r * cols + i] * inverse_rms * weight[i];
        max_abs = std::max(max_abs, std::abs(expected[r * cols + i]));
      }
    }
    for (const Variant& variant : variants()) {
      if (!variant.supported) continue;
      std::vector<float> y(x.size());
      variant.function(x.data(), weight.data(), y.data(), rows, cols, eps);
      for (std::size_t i = 0; i < y.size(); ++i) {
        ASSERT_NEAR(y[i], expected[i], 1e-5 * std::abs(expected[i]) + 1e-6 * max_abs)
            << variant.name << " cols=" << cols << " i=" << i;
      }
    }
  }
}

TEST(RmsNorm, OutputMayAliasInput) {
  const std::int64_t rows = 4, cols = 333;
  const std::vector<float> x = random_floats(rows * cols, 1.0f, 3);
  const std::vector<float> weight = random_floats(cols, 1.0f, 4);
  for (const Variant& variant : variants()) {
    if (!variant.supported) continue;
    std::vector<float> separate(x.size());
    variant.function(x.data(), weight.data(), separate.data(), rows, cols, 1e-6f);
    std::vector<float> in_place = x;
    variant.function(in_place.data(), weight.data(), in_place.data(), rows, cols, 1e-6f);
    EXPECT_EQ(0, std::memcmp(separate.data(), in_place.data(), x.size() * sizeof(float)))
        << variant.name;
  }
}

// A row's output is bit-identical whether it is normalized alone or inside a batch.
TEST(RmsNorm, RowsAreBatchInvariant) {
  const std::int64_t rows = 9, cols = 4100;
  const std::vector<float> x = random_floats(rows * cols, 3.0f, 5);
  const std::vector<float> weight = random_floats(cols, 1.0f, 6);
  for (const Variant& variant : variants()) {
    if (!variant.supported) continue;
    std::vector<float> batched(x.size());
    variant.function(x.data(), weight.data(), batched.data(), rows, cols, 1e-6f);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::vector<float> single(cols);
      variant.function(x.data() + r * cols, weight.data(), single.data(), 1, cols, 1e-6f);
      EXPECT_EQ(0, std::memcmp(single.data(), batched.data() + r * cols, cols * sizeof(float)))
          << variant.name << " row " << r;
    }
  }
}

}  // namespace
}  // namespace tern::kernels
