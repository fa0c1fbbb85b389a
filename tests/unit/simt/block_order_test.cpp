// The order in which a grid's blocks run: a permutation drawn from the launch's seed and the
// kernel's name, under every thread schedule, the same for the same seed (a failure replays) and
// another for another seed; the process's seed is TERN_SIMT_SCHEDULE_SEED's, which the test
// binaries fix at start (tests/support/simt_schedule_seed.cpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "kernels/simt/device_memory.h"
#include "kernels/simt/portable.h"
#include "tests/unit/simt/simt_test_support.h"

namespace tern::simt {
namespace {

// ran[linear block] = how many blocks ran before it.
__global__ void record_block_order(int* counter, int* ran) {
  if (threadIdx.x != 0) return;
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  ran[block] = atomicAdd(counter, 1);
}

std::vector<int> block_order(Dim3 grid, Schedule schedule, std::uint64_t seed,
                             const char* name = "record_block_order") {
  DeviceVector<int> counter(1, 0);
  DeviceVector<int> ran(grid.count(), -1);
  LaunchConfig config = config_of(grid, 32, schedule);
  config.seed = seed;
  const LaunchStatus status = launch(name, config, record_block_order, counter.data(), ran.data());
  EXPECT_TRUE(status.ok()) << status.message;
  return {ran.begin(), ran.end()};
}

TEST(SimtBlockOrder, BlocksRunOnceEachInAnOrderTheSeedDraws) {
  const Dim3 grid(7, 3, 2);
  for (Schedule schedule : kAllSchedules) {
    const std::vector<int> first = block_order(grid, schedule, 1);
    std::vector<int> sorted = first;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> each(grid.count());
    std::iota(each.begin(), each.end(), 0);
    EXPECT_EQ(sorted, each) << "every block runs exactly once";
    EXPECT_EQ(block_order(grid, schedule, 1), first) << "the same seed replays the order";
    std::set<std::vector<int>> orders;
    for (std::uint64_t seed = 0; seed < 8; ++seed) orders.insert(block_order(grid, schedule, seed));
    EXPECT_GE(orders.size(), 7u) << "other seeds draw other orders";
    EXPECT_FALSE(orders.contains(each)) << "eight seeds that all give ascending order";
  }
}

TEST(SimtBlockOrder, KernelsOverTheSameGridRunTheirBlocksInDifferentOrders) {
  const Dim3 grid(64);
  EXPECT_NE(block_order(grid, Schedule::forward, 5, "one kernel"),
            block_order(grid, Schedule::forward, 5, "another kernel"));
}

TEST(SimtBlockOrder, TheProcessSeedIsTheEnvironmentsAndLaunchesUseIt) {
  const char* set = std::getenv(kScheduleSeedVariable);
  ASSERT_NE(set, nullptr) << "the test binary sets it at start";
  EXPECT_EQ(process_schedule_seed(), std::strtoull(set, nullptr, 0));
  EXPECT_EQ(default_config(1, 1, 0).seed, process_schedule_seed());
}

}  // namespace
}  // namespace tern::simt
