// The bias add (kernels/cuda/add_bias_kernel.cuh) through its launcher, against the arithmetic of
// CpuBatchOps::add_bias (row[i] += bias[i], one float add): widths with partial warps and blocks,
// 1 to 64 rows, packed and padded rows, zeros, subnormals, infinities and overflow, every schedule.

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cuda/add_bias.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

constexpr int kWidths[] = {1, 31, 33, 4096};
constexpr long long kTokenCounts[] = {1, 2, 37, 64};
constexpr long long kPaddings[] = {0, 5};

// Mostly ordinary values; every seventh one a value at the edges of float arithmetic.
std::vector<float> random_values(std::size_t n, unsigned seed) {
  constexpr float kInfinity = std::numeric_limits<float>::infinity();
  constexpr float kSpecial[] = {0.0f,    -0.0f,    FLT_TRUE_MIN, -FLT_TRUE_MIN, FLT_MIN / 3.0f,
                                FLT_MAX, -FLT_MAX, kInfinity,    -kInfinity};
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = i % 7 == 3 ? kSpecial[random() % std::size(kSpecial)] : value(random);
  }
  return values;
}

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = std::bit_cast<std::uint32_t>(values[i]);
  return bits;
}

// A GPU's NaN is not the x86 default NaN, so no sum here is one: an infinity meets no infinity
// of the other sign.
void avoid_nan_sums(std::vector<float>& rows, long long stride, const std::vector<float>& bias) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::size_t column = i % static_cast<std::size_t>(stride);
    if (column >= bias.size()) continue;  // padding, never added to
    const float b = bias[column];
    if (std::isinf(rows[i]) && std::isinf(b) && (rows[i] > 0) != (b > 0)) rows[i] = -rows[i];
  }
}

// Identical bits required: the kernel does the CPU's one IEEE add per element, round to nearest,
// subnormals kept (nvcc builds without -ftz); 0 elements differ (measured on the emulator).
TEST(CudaAddBias, MatchesTheCpuAddBitForBitAndWritesOnlyTheRows) {
  TERN_REQUIRE_DEVICE();
  for (const int width : kWidths) {
    for (const long long tokens : kTokenCounts) {
      for (const long long padding : kPaddings) {
        const long long stride = width + padding;
        const std::vector<float> bias = random_values(static_cast<std::size_t>(width), 1);
        // One guard row past the last: nothing but the rows' first `width` values may change.
        std::vector<float> rows =
            random_values(static_cast<std::size_t>((tokens + 1) * stride), 2 + width);
        avoid_nan_sums(rows, stride, bias);
        std::vector<float> expected = rows;
        for (long long t = 0; t < tokens; ++t) {
          float* row = expected.data() + t * stride;
          for (int i = 0; i < width; ++i) row[i] += bias[static_cast<std::size_t>(i)];
        }
        DeviceArray<float> d_bias(bias);
        cuda_test::for_each_pass([&](const cuda_test::Pass&) {
          DeviceArray<float> d_rows(rows);
          TERN_EXPECT_LAUNCHED(
              launch_add_bias(d_rows.data(), stride, tokens, d_bias.data(), width, nullptr));
          EXPECT_EQ(bits_of(d_rows.download()), bits_of(expected))
              << "width " << width << " tokens " << tokens << " stride " << stride;
        });
      }
    }
  }
}

TEST(CudaAddBias, RefusesBadArgumentsWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  constexpr int kWidth = 33;
  const std::vector<float> values = random_values(4 * kWidth, 3);
  DeviceArray<float> rows(values);
  DeviceArray<float> bias(random_values(kWidth, 4));
  float* r = rows.data();
  const float* b = bias.data();
  EXPECT_EQ(launch_add_bias(r, kWidth, -1, b, kWidth, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_add_bias(r, kWidth, 4, b, 0, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_add_bias(r, kWidth - 1, 4, b, kWidth, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_add_bias(nullptr, kWidth, 4, b, kWidth, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_add_bias(r, kWidth, 4, nullptr, kWidth, nullptr), cudaErrorInvalidValue);
  // The bias inside the rows it is added to (their last row).
  EXPECT_EQ(launch_add_bias(r, kWidth, 4, r + 3 * kWidth, kWidth, nullptr), cudaErrorInvalidValue);
  // More than 65535 blocks of 256 across a row; a span no device holds.
  EXPECT_EQ(launch_add_bias(r, 65536LL * 256, 1, b, 65536 * 256, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_add_bias(r, 1LL << 62, 4, b, kWidth, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_add_bias(r, kWidth, 0, b, kWidth, nullptr), cudaSuccess);
  EXPECT_EQ(launch_add_bias(nullptr, kWidth, 0, nullptr, kWidth, nullptr), cudaSuccess);
  EXPECT_EQ(bits_of(rows.download()), bits_of(values));
}

}  // namespace
}  // namespace tern::kernels::cuda
