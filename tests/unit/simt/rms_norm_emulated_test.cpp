// The CUDA RMSNorm kernel (kernels/cuda/rms_norm_kernel.cuh) run on the SIMT emulator against
// the CPU kernel.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cuda/rms_norm_kernel.cuh"
#include "tests/unit/simt/simt_test_support.h"

namespace tern::kernels::cuda {
namespace {

using simt::Schedule;

// The GPU sums squares in a different order than the CPU kernel: relative error in float32.
constexpr float kTolerance = 2e-5f;

template <int kThreads>
void check_against_cpu() {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  for (int cols : {1, 31, 33, 100, 257}) {
    std::vector<float> weight(cols);
    for (float& w : weight) w = value(random);
    for (int rows = 1; rows <= 17; ++rows) {
      std::vector<float> x(static_cast<std::size_t>(rows) * cols);
      for (float& v : x) v = value(random);
      std::vector<float> expected(x.size());
      rms_norm_scalar(x.data(), weight.data(), expected.data(), rows, cols, 1e-5f);
      std::vector<float> first;
      for (Schedule schedule : simt::kAllSchedules) {
        std::vector<float> y(x.size(), -1.0f);
        const simt::LaunchStatus status =
            simt::launch("rms_norm_kernel", simt::config_of(rows, kThreads, schedule),
                         rms_norm_kernel<kThreads>, x.data(), weight.data(), y.data(), cols, 1e-5f);
        ASSERT_TRUE(status.ok()) << status.message;
        for (std::size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], expected[i], kTolerance * std::max(1.0f, std::fabs(expected[i])))
              << rows << "x" << cols << " element " << i;
        // The reduction order is fixed, so every schedule gives the same bits.
        if (first.empty()) first = y;
        EXPECT_EQ(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)), 0);
      }
    }
  }
}

TEST(SimtRmsNorm, MatchesTheCpuKernelUnderEverySchedule) {
  check_against_cpu<256>();
}

TEST(SimtRmsNorm, MatchesTheCpuKernelWithTwoWarps) {
  check_against_cpu<64>();
}

}  // namespace
}  // namespace tern::kernels::cuda
