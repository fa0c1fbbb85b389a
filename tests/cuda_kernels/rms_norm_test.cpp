// The RMSNorm kernel (kernels/cuda/rms_norm_kernel.cuh) through its launcher, against the CPU
// kernel, under every schedule.

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cuda/rms_norm.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

// The GPU sums squares in a different order than the CPU kernel: relative error in float32.
constexpr float kTolerance = 2e-5f;

TEST(CudaRmsNorm, MatchesTheCpuKernelUnderEverySchedule) {
  TERN_REQUIRE_DEVICE();
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  for (int cols : {1, 16, 31, 33, 100, 257, 2048}) {
    std::vector<float> weight(static_cast<std::size_t>(cols));
    for (float& w : weight) w = value(random);
    DeviceArray<float> d_weight(weight);
    for (int rows : {1, 2, 5, 17}) {
      std::vector<float> x(static_cast<std::size_t>(rows) * cols);
      for (float& v : x) v = value(random);
      std::vector<float> expected(x.size());
      rms_norm_scalar(x.data(), weight.data(), expected.data(), rows, cols, 1e-5f);
      DeviceArray<float> d_x(x);
      std::vector<float> first;
      cuda_test::for_each_pass([&](const cuda_test::Pass&) {
        DeviceArray<float> d_y(x.size());
        TERN_EXPECT_LAUNCHED(
            launch_rms_norm(d_x.data(), d_weight.data(), d_y.data(), rows, cols, 1e-5f, nullptr));
        const std::vector<float> y = d_y.download();
        for (std::size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], expected[i], kTolerance * std::max(1.0f, std::fabs(expected[i])))
              << rows << "x" << cols << " element " << i;
        // The reduction order is fixed, so every schedule gives the same bits.
        if (first.empty()) first = y;
        EXPECT_EQ(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)), 0);
      });
    }
  }
}

}  // namespace
}  // namespace tern::kernels::cuda
