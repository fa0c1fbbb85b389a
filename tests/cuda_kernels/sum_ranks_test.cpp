// The rank-order sum of an all-gather (kernels/cuda/sum_ranks_kernel.cuh) through its launcher,
// against the host's sum in rank order: 1, 2, 3, 4 and 8 ranks, counts with partial warps and
// blocks, one count past the launcher's largest grid (so threads loop), every schedule.

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cuda/sum_ranks.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

constexpr int kRanks[] = {1, 2, 3, 4, 8};
constexpr long long kCounts[] = {1, 31, 33, 257, 1000};

// Magnitudes from 2^-20 to 2^20 with both signs, so that summing in another order changes the
// bits of many elements (checked below: the test tells rank order from others).
std::vector<float> gathered_values(int ranks, long long count, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> values(static_cast<std::size_t>(ranks * count));
  for (float& v : values) v = std::ldexp(mantissa(random), exponent(random));
  return values;
}

std::vector<float> rank_order_sum(const std::vector<float>& gathered, int ranks, long long count) {
  std::vector<float> sum(gathered.begin(), gathered.begin() + count);
  for (int r = 1; r < ranks; ++r) {
    for (long long i = 0; i < count; ++i) {
      sum[static_cast<std::size_t>(i)] += gathered[static_cast<std::size_t>(r * count + i)];
    }
  }
  return sum;
}

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = std::bit_cast<std::uint32_t>(values[i]);
  return bits;
}

// Identical bits required: one IEEE float add per rank after the first, in rank order, on every
// rank of a group (that is the point of the kernel); 0 elements differ (measured on the emulator).
TEST(CudaSumRanks, SumsInRankOrderBitForBitAndWritesOnlyOut) {
  TERN_REQUIRE_DEVICE();
  for (const int ranks : kRanks) {
    for (const long long count : kCounts) {
      const std::vector<float> gathered = gathered_values(ranks, count, 7 + ranks);
      const std::vector<float> expected = rank_order_sum(gathered, ranks, count);
      DeviceArray<float> d_gathered(gathered);
      cuda_test::for_each_pass([&](const cuda_test::Pass&) {
        // One guard element past the end: only out's `count` floats may change.
        DeviceArray<float> d_out(std::vector<float>(static_cast<std::size_t>(count + 1), -3.0f));
        TERN_EXPECT_LAUNCHED(
            launch_sum_ranks(d_gathered.data(), ranks, count, d_out.data(), nullptr));
        std::vector<float> with_guard = expected;
        with_guard.push_back(-3.0f);
        EXPECT_EQ(bits_of(d_out.download()), bits_of(with_guard))
            << "ranks " << ranks << " count " << count;
        EXPECT_EQ(bits_of(d_gathered.download()), bits_of(gathered));
      });
    }
  }
}

// The data above tells rank order from reverse order: a kernel summing in another order fails.
TEST(CudaSumRanks, TheTestDataTellsRankOrderFromReverseOrder) {
  const int ranks = 4;
  const long long count = 1000;
  const std::vector<float> gathered = gathered_values(ranks, count, 7 + ranks);
  const std::vector<float> forward = rank_order_sum(gathered, ranks, count);
  int differ = 0;
  for (long long i = 0; i < count; ++i) {
    float reverse = gathered[static_cast<std::size_t>((ranks - 1) * count + i)];
    for (int r = ranks - 2; r >= 0; --r)
      reverse += gathered[static_cast<std::size_t>(r * count + i)];
    differ += std::bit_cast<std::uint32_t>(reverse) !=
              std::bit_cast<std::uint32_t>(forward[static_cast<std::size_t>(i)]);
  }
  EXPECT_GT(differ, 100);
}

// More elements than the launcher's 4096 blocks of 256 threads: each thread sums several.
TEST(CudaSumRanks, CountsPastTheLargestGridLoop) {
  TERN_REQUIRE_DEVICE();
  const int ranks = 2;
  const long long count = 4096LL * 256 + 37;
  const std::vector<float> gathered = gathered_values(ranks, count, 3);
  DeviceArray<float> d_gathered(gathered);
  DeviceArray<float> d_out(static_cast<std::size_t>(count));
  TERN_EXPECT_LAUNCHED(launch_sum_ranks(d_gathered.data(), ranks, count, d_out.data(), nullptr));
  EXPECT_EQ(bits_of(d_out.download()), bits_of(rank_order_sum(gathered, ranks, count)));
}

TEST(CudaSumRanks, RefusesBadArgumentsWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  const std::vector<float> values = gathered_values(3, 40, 5);
  DeviceArray<float> gathered(values);
  DeviceArray<float> out(std::vector<float>(40, 1.0f));
  const float* g = gathered.data();
  float* o = out.data();
  EXPECT_EQ(launch_sum_ranks(g, 0, 40, o, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_sum_ranks(g, 3, -1, o, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_sum_ranks(nullptr, 3, 40, o, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_sum_ranks(g, 3, 40, nullptr, nullptr), cudaErrorInvalidValue);
  // out inside the gathered slices it sums; a span no device holds.
  EXPECT_EQ(launch_sum_ranks(g, 3, 20, gathered.data() + 30, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_sum_ranks(g, 8, 1LL << 38, o, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_sum_ranks(g, 3, 0, o, nullptr), cudaSuccess);
  EXPECT_EQ(launch_sum_ranks(nullptr, 3, 0, nullptr, nullptr), cudaSuccess);
  EXPECT_EQ(bits_of(out.download()), bits_of(std::vector<float>(40, 1.0f)));
  EXPECT_EQ(bits_of(gathered.download()), bits_of(values));
}

}  // namespace
}  // namespace tern::kernels::cuda
