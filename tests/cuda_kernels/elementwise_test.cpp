// The element-wise kernels (kernels/cuda/elementwise_kernel.cuh) through their launchers, against
// the CPU kernels: ragged lengths, partial last blocks, every schedule.

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/cuda/elementwise.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

constexpr long long kLengths[] = {1, 31, 32, 33, 255, 256, 257, 1000, 4097};

std::vector<float> random_values(long long n, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (float& v : values) v = value(random);
  return values;
}

// On the emulator expf is the host's, the CPU kernel's, so the bits agree. On a GPU expf is
// within 2 ulp (CUDA programming guide, mathematical functions), so the product within ~4 ulp.
#if defined(TERN_SIMT_EMULATED)
constexpr float kSiluUlps = 0.0f;
#else
constexpr float kSiluUlps = 4.0f;
#endif

TEST(CudaElementwise, SiluMulMatchesTheCpuKernel) {
  TERN_REQUIRE_DEVICE();
  for (const long long n : kLengths) {
    const std::vector<float> gate = random_values(n, 1);
    const std::vector<float> up = random_values(n, 2);
    std::vector<float> expected(gate.size());
    silu_mul_scalar(gate.data(), up.data(), expected.data(), n);
    DeviceArray<float> d_gate(gate), d_up(up);
    cuda_test::for_each_pass([&](const cuda_test::Pass&) {
      DeviceArray<float> d_out(gate.size());
      TERN_EXPECT_LAUNCHED(launch_silu_mul(d_gate.data(), d_up.data(), d_out.data(), n, nullptr));
      const std::vector<float> out = d_out.download();
      for (std::size_t i = 0; i < out.size(); ++i) {
        const float ulp = std::nextafter(std::fabs(expected[i]), INFINITY) - std::fabs(expected[i]);
        ASSERT_LE(std::fabs(out[i] - expected[i]), kSiluUlps * ulp) << "n " << n << " i " << i;
      }
    });
  }
}

TEST(CudaElementwise, AddWritesEveryElementOnceAndNothingPastTheEnd) {
  TERN_REQUIRE_DEVICE();
  for (const long long n : kLengths) {
    const std::vector<float> from = random_values(n, 3);
    const std::vector<float> into = random_values(n + 1, 4);  // one guard element past the end
    std::vector<float> expected = into;
    for (long long i = 0; i < n; ++i) expected[static_cast<std::size_t>(i)] += from[i];
    DeviceArray<float> d_from(from);
    cuda_test::for_each_pass([&](const cuda_test::Pass&) {
      DeviceArray<float> d_into(into);
      TERN_EXPECT_LAUNCHED(launch_add(d_into.data(), d_from.data(), n, nullptr));
      EXPECT_EQ(d_into.download(), expected) << "n " << n;
    });
  }
}

}  // namespace
}  // namespace tern::kernels::cuda
