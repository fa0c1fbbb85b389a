// The CUDA element-wise kernels (kernels/cuda/elementwise_kernel.cuh) run on the SIMT emulator
// against the CPU kernels: ragged lengths, partial last blocks, every schedule.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/cuda/elementwise_kernel.cuh"
#include "tests/unit/simt/simt_test_support.h"

namespace tern::kernels::cuda {
namespace {

using simt::Schedule;

constexpr long long kLengths[] = {1, 31, 32, 33, 255, 1000, 4097};

std::vector<float> random_values(long long n, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (float& v : values) v = value(random);
  return values;
}

unsigned int blocks(long long n, int threads) {
  return static_cast<unsigned int>((n + threads - 1) / threads);
}

// The same formula in float on both sides; the host's expf is the CPU kernel's, so the bits
// agree here. On a GPU, expf is within 2 ulp of it (CUDA programming guide, appendix on
// mathematical functions): the test on a device allows that.
TEST(SimtElementwise, SiluMulMatchesTheCpuKernel) {
  for (const int threads : {64, 256}) {
    for (const long long n : kLengths) {
      const std::vector<float> gate = random_values(n, 1);
      const std::vector<float> up = random_values(n, 2);
      std::vector<float> expected(gate.size());
      silu_mul_scalar(gate.data(), up.data(), expected.data(), n);
      for (const Schedule schedule : simt::kAllSchedules) {
        std::vector<float> out(gate.size(), -1.0f);
        const simt::LaunchStatus status =
            simt::launch("silu_mul_kernel", simt::config_of(blocks(n, threads), threads, schedule),
                         silu_mul_kernel, gate.data(), up.data(), out.data(), n);
        ASSERT_TRUE(status.ok()) << status.message;
        EXPECT_EQ(out, expected) << "n " << n << ", " << threads << " threads";
      }
    }
  }
}

TEST(SimtElementwise, AddWritesEveryElementOnceAndNothingPastTheEnd) {
  for (const long long n : kLengths) {
    const std::vector<float> from = random_values(n, 3);
    std::vector<float> into = random_values(n + 1, 4);  // one guard element past the end
    std::vector<float> expected = into;
    for (long long i = 0; i < n; ++i) expected[static_cast<std::size_t>(i)] += from[i];
    for (const Schedule schedule : simt::kAllSchedules) {
      std::vector<float> out = into;
      const simt::LaunchStatus status =
          simt::launch("add_kernel", simt::config_of(blocks(n, 128), 128, schedule), add_kernel,
                       out.data(), from.data(), n);
      ASSERT_TRUE(status.ok()) << status.message;
      EXPECT_EQ(out, expected) << "n " << n;
    }
  }
}

}  // namespace
}  // namespace tern::kernels::cuda
