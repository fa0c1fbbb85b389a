#include "kernels/cpu/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_features.h"

namespace tern::kernels {
namespace {

using SiluMulFunction = void (*)(const float*, const float*, float*, std::int64_t);

struct Variant {
  const char* name;
  SiluMulFunction function;
  bool supported;
};

std::vector<Variant> variants() {
  const CpuFeatures& f = cpu_features();
  return {{"scalar", silu_mul_scalar, true},
          {"avx2", silu_mul_avx2, f.avx2 && f.fma && f.f16c},
          {"avx512", silu_mul_avx512, f.has_avx512()},
          {"dispatched", silu_mul, true}};
}

double silu_mul_reference(double gate, double up) {
  return gate / (1.0 + std::exp(-gate)) * up;
}

// Every variant against double precision: |out - ref| <= 4e-6 * |ref| + 1e-37 (a few float ulp
// from exp, the division and the product; results below FLT_MIN may flush).
TEST(SiluMul, MatchesDoubleReferenceOnEveryVariant) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-30.0f, 30.0f);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (const std::int64_t n : {1, 5, 8, 15, 16, 17, 31, 100, 1000, 4867}) {
    std::vector<float> gate(static_cast<std::size_t>(n)), up(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      gate[i] = i % 3 == 0 ? wide(rng) : normal(rng);
      up[i] = normal(rng);
    }
    const float specials[] = {0.0f, -0.0f, 88.0f, -88.0f, 100.0f, -100.0f, 1e-20f, -1e-20f};
    for (std::size_t s = 0; s < std::size(specials) && s < gate.size(); ++s) gate[s] = specials[s];
    for (const Variant& variant : variants()) {
      if (!variant.supported) continue;
      std::vector<float> out(gate.size());
      variant.function(gate.data(), up.data(), out.data(), n);
      for (std::int64_t i = 0; i < n; ++i) {
        const double expected = silu_mul_reference(gate[i], up[i]);
        ASSERT_NEAR(out[i], expected, 4e-6 * std::abs(expected) + 1e-37)
            << variant.name << " n=" << n << " gate=" << gate[i] << " up=" << up[i];
      }
    }
  }
}

TEST(SiluMul, OutputMayAliasGate) {
  std::vector<float> gate(1001), up(1001);
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = normal(rng), up[i] = normal(rng);
  for (const Variant& variant : variants()) {
    if (!variant.supported) continue;
    std::vector<float> separate(gate.size());
    variant.function(gate.data(), up.data(), separate.data(), 1001);
    std::vector<float> in_place = gate;
    variant.function(in_place.data(), up.data(), in_place.data(), 1001);
    EXPECT_EQ(0, std::memcmp(separate.data(), in_place.data(), gate.size() * sizeof(float)))
        << variant.name;
  }
}

// An element's value does not depend on n or on its offset: a flattened [tokens][ffn] batch and
// each row alone (with a row length that leaves vector tails) agree bit for bit.
TEST(SiluMul, ElementsAreBatchInvariant) {
  const std::int64_t tokens = 7, ffn = 77;
  std::vector<float> gate(tokens * ffn), up(tokens * ffn);
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = normal(rng), up[i] = normal(rng);
  for (const Variant& variant : variants()) {
    if (!variant.supported) continue;
    std::vector<float> batched(gate.size());
    variant.function(gate.data(), up.data(), batched.data(), tokens * ffn);
    for (std::int64_t t = 0; t < tokens; ++t) {
      std::vector<float> single(ffn);
      variant.function(gate.data() + t * ffn, up.data() + t * ffn, single.data(), ffn);
      EXPECT_EQ(0, std::memcmp(single.data(), batched.data() + t * ffn, ffn * sizeof(float)))
          << variant.name << " token " << t;
    }
  }
}

}  // namespace
}  // namespace tern::kernels
