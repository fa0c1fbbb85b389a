// The RoPE kernel (kernels/cuda/rope_kernel.cuh) through its launcher, against the CPU kernel
// apply_rope: both layouts, every frequency scaling, full and partial rotary widths, positions
// past 4096, under every schedule.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/rope.h"
#include "kernels/cuda/rope.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

// The kernel takes the CPU kernel's angle (position * frequency in double) and rounds double cos
// and sin to float, as the CPU does, but with its own cos/sin (rope_cos_sin, within ~1e-15 of
// glibc's), so a cosine or sine may round 1 float ulp away from the CPU's: an output a * c - b * s
// then moves by at most 1 ulp of |a| + |b| (a, b the pair's inputs, which bound the output). On a
// GPU, nvcc also contracts a * c - b * s into a fused multiply-add, a few ulp more.
#if defined(TERN_SIMT_EMULATED)
constexpr float kUlpsOfPair = 1.0f;
#else
constexpr float kUlpsOfPair = 4.0f;
#endif

struct RopeShape {
  int head_dim;
  int rotary_dim;
  int n_heads;
};

// Full widths and partial ones (latent attention: rotary 8 of 24, 16 of 40, 64 of 192); 288 of
// 320 has more pairs than a block has threads.
constexpr RopeShape kShapes[] = {{16, 16, 3},  {24, 8, 2},   {32, 32, 5},   {40, 16, 3},
                                 {64, 64, 2},  {64, 32, 3},  {128, 128, 3}, {128, 64, 1},
                                 {192, 64, 2}, {320, 288, 1}};
constexpr long long kTokenCounts[] = {1, 5, 64, 33};

struct NamedScaling {
  std::string name;
  float theta;
  RopeScaling scaling;
};

std::vector<NamedScaling> scalings() {
  RopeScaling linear;
  linear.type = RopeScaling::Type::linear;
  linear.factor = 4;
  RopeScaling llama3;  // Llama 3.1's values
  llama3.type = RopeScaling::Type::llama3;
  llama3.factor = 8;
  llama3.low_freq_factor = 1;
  llama3.high_freq_factor = 4;
  llama3.original_max_position = 8192;
  return {{"none", 10000.0f, RopeScaling{}},
          {"linear", 10000.0f, linear},
          {"llama3", 500000.0f, llama3}};
}

// Positions from 0 to past a million, with the 4095/4096 and 8191/8192 boundaries.
std::vector<std::int32_t> positions_for(long long tokens, std::mt19937& random) {
  constexpr std::int32_t kFixed[] = {0, 4096, 131071, 4095, 1000003, 8192, 8191, 1};
  std::uniform_int_distribution<std::int32_t> any(0, 200000);
  std::vector<std::int32_t> positions(static_cast<std::size_t>(tokens));
  for (std::size_t t = 0; t < positions.size(); ++t)
    positions[t] = t < std::size(kFixed) ? kFixed[t] : any(random);
  return positions;
}

// Per element of x: |a| + |b| of the pair it belongs to, 0 for a dimension no rotation touches
// (which must come back with the same bits).
std::vector<float> pair_magnitudes(const std::vector<float>& x, long long tokens,
                                   long long row_stride, const RopeShape& shape,
                                   RopeLayout layout) {
  std::vector<float> magnitudes(x.size(), 0.0f);
  const int pairs = shape.rotary_dim / 2;
  for (long long token = 0; token < tokens; ++token) {
    for (int head = 0; head < shape.n_heads; ++head) {
      const long long base = token * row_stride + static_cast<long long>(head) * shape.head_dim;
      for (int i = 0; i < pairs; ++i) {
        const auto first =
            static_cast<std::size_t>(base + (layout == RopeLayout::neox ? i : 2 * i));
        const auto second =
            static_cast<std::size_t>(base + (layout == RopeLayout::neox ? i + pairs : 2 * i + 1));
        magnitudes[first] = magnitudes[second] = std::fabs(x[first]) + std::fabs(x[second]);
      }
    }
  }
  return magnitudes;
}

// One unit in the last place of a float of magnitude `value`.
float ulp_of(float value) {
  return std::nextafter(value, INFINITY) - value;
}

TEST(CudaRope, MatchesTheCpuKernelForEveryLayoutScalingAndWidth) {
  TERN_REQUIRE_DEVICE();
  std::mt19937 random(11);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  float max_error_in_ulps = 0;
  std::size_t case_index = 0;
  for (const RopeLayout layout : {RopeLayout::neox, RopeLayout::interleaved}) {
    for (const NamedScaling& named : scalings()) {
      for (const RopeShape& shape : kShapes) {
        const long long tokens = kTokenCounts[case_index++ % std::size(kTokenCounts)];
        // Padding past the heads, which no rotation may touch.
        const long long row_stride = static_cast<long long>(shape.n_heads) * shape.head_dim + 3;
        const std::vector<float> frequencies =
            rope_inverse_frequencies(shape.rotary_dim, named.theta, named.scaling);
        const int pairs = static_cast<int>(frequencies.size());
        const std::vector<std::int32_t> positions = positions_for(tokens, random);
        std::vector<float> x(static_cast<std::size_t>(tokens * row_stride));
        for (float& v : x) v = value(random);
        const std::vector<float> magnitudes = pair_magnitudes(x, tokens, row_stride, shape, layout);
        std::vector<float> expected = x;
        apply_rope(expected.data(), tokens, row_stride, shape.n_heads, shape.head_dim,
                   positions.data(), frequencies, layout);
        DeviceArray<std::int32_t> d_positions(positions);
        DeviceArray<float> d_frequencies(frequencies);
        cuda_test::for_each_pass([&](const cuda_test::Pass&) {
          DeviceArray<float> d_x(x);
          TERN_EXPECT_LAUNCHED(launch_rope(d_x.data(), tokens, row_stride, shape.n_heads,
                                           shape.head_dim, d_positions.data(), d_frequencies.data(),
                                           pairs, layout, nullptr));
          const std::vector<float> out = d_x.download();
          for (std::size_t i = 0; i < out.size(); ++i) {
            const float error = std::fabs(out[i] - expected[i]);
            const float allowed = magnitudes[i] == 0 ? 0.0f : kUlpsOfPair * ulp_of(magnitudes[i]);
            if (magnitudes[i] != 0)
              max_error_in_ulps = std::max(max_error_in_ulps, error / ulp_of(magnitudes[i]));
            ASSERT_LE(error, allowed)
                << named.name << (layout == RopeLayout::neox ? " neox" : " interleaved")
                << " head_dim " << shape.head_dim << " rotary " << shape.rotary_dim << " tokens "
                << tokens << " element " << i << " (token "
                << static_cast<long long>(i) / row_stride << ")";
          }
        });
      }
    }
  }
  RecordProperty("max_error_in_ulps_of_pair", std::to_string(max_error_in_ulps));
}

TEST(CudaRope, RefusesBadShapesWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  const std::vector<float> x(64, 1.5f);
  const std::vector<std::int32_t> positions = {3, 4};
  const std::vector<float> frequencies(8, 0.5f);
  DeviceArray<float> d_x(x);
  DeviceArray<std::int32_t> d_positions(positions);
  DeviceArray<float> d_frequencies(frequencies);
  const auto launch = [&](long long tokens, long long stride, int heads, int head_dim, int pairs,
                          float* data, const std::int32_t* at, const float* frequency) {
    return launch_rope(data, tokens, stride, heads, head_dim, at, frequency, pairs,
                       RopeLayout::neox, nullptr);
  };
  float* p = d_x.data();
  const std::int32_t* at = d_positions.data();
  const float* f = d_frequencies.data();
  EXPECT_EQ(launch(-1, 32, 2, 16, 8, p, at, f), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 31, 2, 16, 8, p, at, f), cudaErrorInvalidValue);  // stride < heads * dim
  EXPECT_EQ(launch(2, 32, 0, 16, 8, p, at, f), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, 2, 0, 8, p, at, f), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, 2, 16, 0, p, at, f), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, 2, 14, 8, p, at, f), cudaErrorInvalidValue);  // 2 * pairs > head_dim
  EXPECT_EQ(launch(2, 2048, 1, 2048, kMaxRopePairs + 1, p, at, f), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, 2, 16, 8, nullptr, at, f), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, 2, 16, 8, p, nullptr, f), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, 2, 16, 8, p, at, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch(0, 32, 2, 16, 8, p, at, f), cudaSuccess);  // an empty batch is no work
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(d_x.download(), x);
}

}  // namespace
}  // namespace tern::kernels::cuda
