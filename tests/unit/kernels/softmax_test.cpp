#include "kernels/cpu/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_features.h"

namespace tern::kernels {
namespace {

using SoftmaxFunction = void (*)(float*, std::int64_t);

struct Variant {
  const char* name;
  SoftmaxFunction function;
  bool supported;
};

std::vector<Variant> variants() {
  const CpuFeatures& f = cpu_features();
  return {{"scalar", softmax_scalar, true},
          {"avx2", softmax_avx2, f.avx2 && f.fma && f.f16c},
          {"avx512", softmax_avx512, f.has_avx512()},
          {"dispatched", softmax, true}};
}

std::vector<double> reference(const std::vector<float>& x) {
  double maximum = x[0];
  for (const float v : x) maximum = std::max<double>(maximum, v);
  std::vector<double> p(x.size());
  double sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sum += p[i] = std::exp(x[i] - maximum);
  for (double& v : p) v /= sum;
  return p;
}

// Every variant against double precision: |p - ref| <= 1e-5 * ref + 1e-9 (float rounding of the
// exponentials and of a sum over up to 151936 terms), and the probabilities sum to 1 within 1e-5.
TEST(Softmax, MatchesDoubleReferenceOnEveryVariant) {
  std::mt19937 rng(11);
  for (const std::int64_t n : {1, 2, 7, 8, 16, 17, 33, 1000, 32000, 151936}) {
    for (const float spread : {1.0f, 10.0f, 1000.0f}) {
      std::normal_distribution<float> normal(5.0f, spread);
      std::vector<float> logits(static_cast<std::size_t>(n));
      for (float& v : logits) v = normal(rng);
      const std::vector<double> expected = reference(logits);
      for (const Variant& variant : variants()) {
        if (!variant.supported) continue;
        std::vector<float> p = logits;
        variant.function(p.data(), n);
        double sum = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          ASSERT_NEAR(p[i], expected[i], 1e-5 * expected[i] + 1e-9)
              << variant.name << " n=" << n << " spread=" << spread << " i=" << i;
          sum += p[i];
        }
        EXPECT_NEAR(sum, 1.0, 1e-5) << variant.name << " n=" << n;
      }
    }
  }
}

TEST(Softmax, HugeLogitsDoNotOverflow) {
  for (const Variant& variant : variants()) {
    if (!variant.supported) continue;
    std::vector<float> x = {1e30f, 1e30f, -1e30f, 0.0f, 1e30f - 1e24f};
    variant.function(x.data(), static_cast<std::int64_t>(x.size()));
    EXPECT_NEAR(x[0], 0.5f, 1e-6f) << variant.name;
    EXPECT_NEAR(x[1], 0.5f, 1e-6f) << variant.name;
    EXPECT_EQ(x[2], 0.0f) << variant.name;
    EXPECT_EQ(x[3], 0.0f) << variant.name;
    EXPECT_EQ(x[4], 0.0f) << variant.name;
  }
}

}  // namespace
}  // namespace tern::kernels
