// The RMSNorm kernels (kernels/cuda/rms_norm_kernel.cuh) through their launchers, against the CPU
// kernel, under every schedule: the plain norm, the norm fused with the residual add before it,
// and the per-head norm; and that a row's bits do not depend on the other rows of the launch.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cuda/rms_norm.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

// The GPU sums squares in float in a tree, the CPU's scalar kernel in double: relative error in
// float32 (measured largest: see the max_relative_error properties).
constexpr float kTolerance = 2e-5f;
constexpr float kEps = 1e-5f;

std::vector<float> random_values(std::size_t count, std::mt19937& random) {
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  std::vector<float> values(count);
  for (float& v : values) v = value(random);
  return values;
}

// Asserts every element within kTolerance of the reference, relative (absolute below 1); returns
// the largest such error.
float expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected,
                      const std::string& what) {
  EXPECT_EQ(actual.size(), expected.size()) << what;
  float largest = 0;
  for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    const float error = std::fabs(actual[i] - expected[i]) / std::max(1.0f, std::fabs(expected[i]));
    largest = std::max(largest, error);
    if (!(error <= kTolerance)) {
      ADD_FAILURE() << what << " element " << i << ": " << actual[i] << " against " << expected[i];
      break;
    }
  }
  return largest;
}

std::string scientific(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", static_cast<double>(value));
  return text;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(CudaRmsNorm, MatchesTheCpuKernelUnderEverySchedule) {
  TERN_REQUIRE_DEVICE();
  std::mt19937 random(7);
  float largest = 0;
  for (int cols : {1, 16, 31, 33, 100, 257, 2048}) {
    const std::vector<float> weight = random_values(static_cast<std::size_t>(cols), random);
    DeviceArray<float> d_weight(weight);
    for (int rows : {1, 2, 5, 17}) {
      const std::vector<float> x = random_values(static_cast<std::size_t>(rows) * cols, random);
      std::vector<float> expected(x.size());
      rms_norm_scalar(x.data(), weight.data(), expected.data(), rows, cols, kEps);
      DeviceArray<float> d_x(x);
      std::vector<float> first;
      cuda_test::for_each_pass([&](const cuda_test::Pass&) {
        DeviceArray<float> d_y(x.size());
        TERN_EXPECT_LAUNCHED(
            launch_rms_norm(d_x.data(), d_weight.data(), d_y.data(), rows, cols, kEps, nullptr));
        const std::vector<float> y = d_y.download();
        largest = std::max(
            largest,
            expect_near_all(y, expected, std::to_string(rows) + "x" + std::to_string(cols)));
        // The reduction order is fixed, so every schedule gives the same bits.
        if (first.empty()) first = y;
        EXPECT_TRUE(same_bits(first, y));
      });
    }
  }
  RecordProperty("max_relative_error", scientific(largest));
}

// The CPU backend's rms_norm with a residual: add (residual += delta), then the norm of the sum.
TEST(CudaRmsNorm, ResidualVariantAddsThenNormsAsTheCpuBackend) {
  TERN_REQUIRE_DEVICE();
  std::mt19937 random(8);
  float largest = 0;
  for (int cols : {1, 31, 33, 257, 1000, 4096}) {
    const std::vector<float> weight = random_values(static_cast<std::size_t>(cols), random);
    DeviceArray<float> d_weight(weight);
    for (int rows : {1, 3, 17}) {
      const std::size_t count = static_cast<std::size_t>(rows) * cols;
      const std::vector<float> residual = random_values(count, random);
      const std::vector<float> delta = random_values(count, random);
      std::vector<float> expected_residual = residual;
      for (std::size_t i = 0; i < count; ++i) expected_residual[i] += delta[i];
      std::vector<float> expected(count);
      rms_norm_scalar(expected_residual.data(), weight.data(), expected.data(), rows, cols, kEps);
      const std::string what = std::to_string(rows) + "x" + std::to_string(cols);
      cuda_test::for_each_pass([&](const cuda_test::Pass&) {
        DeviceArray<float> d_residual(residual), d_delta(delta), d_y(count);
        TERN_EXPECT_LAUNCHED(launch_rms_norm_residual(d_residual.data(), d_delta.data(),
                                                      d_weight.data(), d_y.data(), rows, cols, kEps,
                                                      nullptr));
        EXPECT_TRUE(same_bits(d_residual.download(), expected_residual)) << what;
        EXPECT_EQ(d_delta.download(), delta) << what;
        largest = std::max(largest, expect_near_all(d_y.download(), expected, what));
        // The output may overwrite delta: the same bits as into a buffer of its own.
        DeviceArray<float> d_residual_again(residual), d_delta_out(delta);
        TERN_EXPECT_LAUNCHED(launch_rms_norm_residual(d_residual_again.data(), d_delta_out.data(),
                                                      d_weight.data(), d_delta_out.data(), rows,
                                                      cols, kEps, nullptr));
        EXPECT_TRUE(same_bits(d_delta_out.download(), d_y.download())) << what;
      });
    }
  }
  RecordProperty("max_relative_error", scientific(largest));
}

struct PerHeadCase {
  int head_dim;
  int n_heads;
  long long tokens;
};

// The CPU backend norms q (and k) in place as tokens * n_heads rows of head_dim; here rows are
// also `padding` floats longer than their heads (q inside a fused qkv row), which stay untouched.
TEST(CudaRmsNorm, PerHeadVariantMatchesTheCpuKernelInPlaceAndOutOfPlace) {
  TERN_REQUIRE_DEVICE();
  std::mt19937 random(9);
  float largest = 0;
  constexpr PerHeadCase kCases[] = {{16, 1, 1}, {16, 8, 5},   {32, 3, 17}, {64, 2, 3},
                                    {64, 5, 1}, {128, 3, 17}, {128, 1, 2}, {24, 7, 4},
                                    {40, 3, 9}, {100, 2, 3},  {8, 5, 6}};
  for (const PerHeadCase& c : kCases) {
    const long long row_stride = static_cast<long long>(c.n_heads) * c.head_dim + 5;
    const std::vector<float> weight = random_values(static_cast<std::size_t>(c.head_dim), random);
    const std::vector<float> x =
        random_values(static_cast<std::size_t>(c.tokens * row_stride), random);
    std::vector<float> expected = x;
    for (long long t = 0; t < c.tokens; ++t)
      rms_norm_scalar(expected.data() + t * row_stride, weight.data(),
                      expected.data() + t * row_stride, c.n_heads, c.head_dim, kEps);
    const std::string what = "head_dim " + std::to_string(c.head_dim) + " heads " +
                             std::to_string(c.n_heads) + " tokens " + std::to_string(c.tokens);
    DeviceArray<float> d_weight(weight);
    cuda_test::for_each_pass([&](const cuda_test::Pass&) {
      DeviceArray<float> d_x(x);
      TERN_EXPECT_LAUNCHED(launch_rms_norm_per_head(d_x.data(), d_weight.data(), d_x.data(),
                                                    c.tokens, row_stride, c.n_heads, c.head_dim,
                                                    kEps, nullptr));
      const std::vector<float> in_place = d_x.download();
      largest = std::max(largest, expect_near_all(in_place, expected, what + " in place"));
      // Out of place: the same bits, and y's padding untouched.
      DeviceArray<float> d_source(x);
      DeviceArray<float> d_y(x);
      TERN_EXPECT_LAUNCHED(launch_rms_norm_per_head(d_source.data(), d_weight.data(), d_y.data(),
                                                    c.tokens, row_stride, c.n_heads, c.head_dim,
                                                    kEps, nullptr));
      EXPECT_TRUE(same_bits(d_y.download(), in_place)) << what;
      EXPECT_EQ(d_source.download(), x) << what;
    });
  }
  RecordProperty("max_relative_error", scientific(largest));
}

// Each kernel's row `row` of a 37-row launch has the bits of the same row launched alone.
TEST(CudaRmsNorm, ARowsBitsDoNotDependOnTheOtherRowsOfTheLaunch) {
  TERN_REQUIRE_DEVICE();
  std::mt19937 random(10);
  constexpr int kRows = 37;
  constexpr int kCols = 1000;
  constexpr int kHeads = 5;
  constexpr int kHeadDim = 64;
  const std::vector<float> weight = random_values(kCols, random);
  const std::vector<float> x = random_values(std::size_t{kRows} * kCols, random);
  const std::vector<float> delta = random_values(x.size(), random);
  DeviceArray<float> d_weight(weight);
  DeviceArray<float> d_x(x), d_delta(delta);
  const auto row_of = [](const std::vector<float>& rows, int row, int width) {
    return std::vector<float>(rows.begin() + std::ptrdiff_t{row} * width,
                              rows.begin() + std::ptrdiff_t{row + 1} * width);
  };
  cuda_test::for_each_pass([&](const cuda_test::Pass&) {
    DeviceArray<float> all_norm(x.size()), all_fused(x.size()), all_residual(x), all_heads(x);
    TERN_EXPECT_LAUNCHED(
        launch_rms_norm(d_x.data(), d_weight.data(), all_norm.data(), kRows, kCols, kEps, nullptr));
    TERN_EXPECT_LAUNCHED(launch_rms_norm_residual(all_residual.data(), d_delta.data(),
                                                  d_weight.data(), all_fused.data(), kRows, kCols,
                                                  kEps, nullptr));
    TERN_EXPECT_LAUNCHED(launch_rms_norm_per_head(all_heads.data(), d_weight.data(),
                                                  all_heads.data(), kRows, kCols, kHeads, kHeadDim,
                                                  kEps, nullptr));
    const std::vector<float> norm = all_norm.download();
    const std::vector<float> fused = all_fused.download();
    const std::vector<float> heads = all_heads.download();
    for (const int row : {0, 17, kRows - 1}) {
      const std::vector<float> x_row = row_of(x, row, kCols);
      const std::vector<float> delta_row = row_of(delta, row, kCols);
      DeviceArray<float> one_x(x_row), one_delta(delta_row), one_norm(kCols), one_fused(kCols),
          one_residual(x_row), one_heads(x_row);
      TERN_EXPECT_LAUNCHED(
          launch_rms_norm(one_x.data(), d_weight.data(), one_norm.data(), 1, kCols, kEps, nullptr));
      TERN_EXPECT_LAUNCHED(launch_rms_norm_residual(one_residual.data(), one_delta.data(),
                                                    d_weight.data(), one_fused.data(), 1, kCols,
                                                    kEps, nullptr));
      TERN_EXPECT_LAUNCHED(launch_rms_norm_per_head(one_heads.data(), d_weight.data(),
                                                    one_heads.data(), 1, kCols, kHeads, kHeadDim,
                                                    kEps, nullptr));
      EXPECT_TRUE(same_bits(one_norm.download(), row_of(norm, row, kCols))) << "row " << row;
      EXPECT_TRUE(same_bits(one_fused.download(), row_of(fused, row, kCols))) << "row " << row;
      EXPECT_TRUE(same_bits(one_heads.download(), row_of(heads, row, kCols))) << "row " << row;
    }
  });
}

TEST(CudaRmsNorm, LaunchersRefuseBadShapesWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  const std::vector<float> values(64, 2.0f);
  DeviceArray<float> d_x(values), d_w(values), d_y(values);
  float* x = d_x.data();
  const float* w = d_w.data();
  float* y = d_y.data();
  EXPECT_EQ(launch_rms_norm(x, w, y, -1, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm(x, w, y, 2, 0, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm(nullptr, w, y, 2, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm(x, nullptr, y, 2, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm(x, w, nullptr, 2, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm(x, w, y, 0, 8, kEps, nullptr), cudaSuccess);

  EXPECT_EQ(launch_rms_norm_residual(x, x, w, y, -1, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_residual(x, x, w, y, 2, 0, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_residual(nullptr, x, w, y, 2, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_residual(x, nullptr, w, y, 2, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_residual(x, x, nullptr, y, 2, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_residual(x, x, w, nullptr, 2, 8, kEps, nullptr), cudaErrorInvalidValue);
  // The output over the residual would lose the residual stream.
  EXPECT_EQ(launch_rms_norm_residual(y, x, w, y, 2, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_residual(y, x, w, x, 0, 8, kEps, nullptr), cudaSuccess);

  EXPECT_EQ(launch_rms_norm_per_head(x, w, y, -1, 16, 2, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_per_head(x, w, y, 2, 15, 2, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_per_head(x, w, y, 2, 16, 0, 8, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_per_head(x, w, y, 2, 16, 2, 0, kEps, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_per_head(nullptr, w, y, 2, 16, 2, 8, kEps, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_per_head(x, nullptr, y, 2, 16, 2, 8, kEps, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_per_head(x, w, nullptr, 2, 16, 2, 8, kEps, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_rms_norm_per_head(x, w, y, 0, 16, 2, 8, kEps, nullptr), cudaSuccess);

  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(d_x.download(), values);
  EXPECT_EQ(d_y.download(), values);
}

}  // namespace
}  // namespace tern::kernels::cuda
