#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kernels/simt/device_memory.h"
#include "kernels/simt/portable.h"
#include "tests/unit/simt/simt_test_support.h"

namespace tern::simt {
namespace {

int g_line = 0;
int g_other_line = 0;

__global__ void record_indices(unsigned* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned global = block * blockDim.x * blockDim.y * blockDim.z + thread;
  out[global * 6 + 0] = threadIdx.x;
  out[global * 6 + 1] = threadIdx.y;
  out[global * 6 + 2] = threadIdx.z;
  out[global * 6 + 3] = blockIdx.x;
  out[global * 6 + 4] = blockIdx.y;
  out[global * 6 + 5] = blockIdx.z;
}

TEST(SimtExecution, ThreeDimensionalGridsAndBlocksSeeTheirIndices) {
  const Dim3 grid(3, 2, 2), block(5, 3, 2);
  DeviceVector<unsigned> out(grid.count() * block.count() * 6, 999);
  ASSERT_TRUE(launch("record_indices", config_of(grid, block), record_indices, out.data()).ok());
  std::size_t i = 0;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx)
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx, i += 6) {
              EXPECT_EQ(out[i + 0], tx);
              EXPECT_EQ(out[i + 1], ty);
              EXPECT_EQ(out[i + 2], tz);
              EXPECT_EQ(out[i + 3], bx);
              EXPECT_EQ(out[i + 4], by);
              EXPECT_EQ(out[i + 5], bz);
            }
}

TEST(SimtExecution, RunsTheLargestBlock) {
  DeviceVector<unsigned> out(1024 * 6);
  EXPECT_TRUE(
      launch("record_indices", config_of(1, Dim3(32, 32)), record_indices, out.data()).ok());
  EXPECT_EQ(launch("record_indices", config_of(1, 1025), record_indices, out.data()).kind,
            LaunchErrorKind::invalid_config);
  EXPECT_EQ(launch("record_indices", config_of(1, Dim3(1, 1, 65)), record_indices, out.data()).kind,
            LaunchErrorKind::invalid_config);
}

// Sums in[0, n) per block with a shared-memory tree; with_barriers = false plants the fault.
template <bool with_barriers>
__global__ void tree_sum(const int* in, int* out) {
  AT_LINE(g_line, TERN_SHARED(int, partial, 256));
  const unsigned t = threadIdx.x;
  partial[t] = in[blockIdx.x * blockDim.x + t];
  if (with_barriers) __syncthreads();
  for (unsigned stride = 128; stride > 0; stride /= 2) {
    if (t < stride && t + stride < blockDim.x) partial[t] += partial[t + stride];
    if (with_barriers) __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

TEST(SimtBarrier, ReductionIsRightUnderEverySchedule) {
  for (unsigned threads : {1u, 31u, 100u, 256u}) {
    DeviceVector<int> in(3 * threads);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i % 17) - 5;
    for (Schedule schedule : kAllSchedules) {
      DeviceVector<int> out(3, 0);
      ASSERT_TRUE(
          launch("tree_sum", config_of(3, threads, schedule), tree_sum<true>, in.data(), out.data())
              .ok());
      for (unsigned b = 0; b < 3; ++b) {
        int expected = 0;
        for (unsigned i = 0; i < threads; ++i) expected += in[b * threads + i];
        EXPECT_EQ(out[b], expected) << threads << " threads, block " << b;
      }
    }
  }
}

// The emulator names the race of a missing barrier under every schedule, whatever the sum.
TEST(SimtBarrier, MissingBarrierIsARaceNamingTheSharedArray) {
  DeviceVector<int> in(256, 1);
  for (Schedule schedule : kAllSchedules) {
    DeviceValue<int> out(0);
    const LaunchStatus status =
        launch("tree_sum", config_of(1, 256, schedule), tree_sum<false>, in.data(), out.ptr());
    expect_fault(status, LaunchErrorKind::shared_race, "tree_sum", "barrier_test.cpp", g_line);
    EXPECT_NE(status.message.find("shared array 'partial'"), std::string::npos) << status.message;
    EXPECT_NE(status.message.find("no barrier between since the kernel's start"), std::string::npos)
        << status.message;
  }
}

// Each thread reads its neighbour's slot without a barrier after the writes: a race.
__global__ void neighbour_race(int* out) {
  AT_LINE(g_line, TERN_SHARED(int, slots, 64));
  slots[threadIdx.x] = static_cast<int>(threadIdx.x);
  out[threadIdx.x] = slots[(threadIdx.x + 1) % blockDim.x];
}

TEST(SimtBarrier, RaceOnSharedMemoryIsAnError) {
  for (Schedule schedule : kAllSchedules) {
    DeviceVector<int> out(64, 0);
    const LaunchStatus status =
        launch("neighbour_race", config_of(1, 64, schedule), neighbour_race, out.data());
    expect_fault(status, LaunchErrorKind::shared_race, "neighbour_race", "barrier_test.cpp",
                 g_line);
    EXPECT_NE(status.message.find("element "), std::string::npos) << status.message;
  }
}

// Two threads of different warps write one slot between the same two barriers.
__global__ void double_write(int* out) {
  AT_LINE(g_line, TERN_SHARED(int, slot, 1));
  if (threadIdx.x == 0 || threadIdx.x == 40) slot[0] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = slot[0];
}

TEST(SimtBarrier, TwoWritesWithNoBarrierBetweenAreARace) {
  DeviceVector<int> out(64, 0);
  const LaunchStatus status = launch("double_write", config_of(1, 64), double_write, out.data());
  expect_fault(status, LaunchErrorKind::shared_race, "double_write", "barrier_test.cpp", g_line);
  EXPECT_NE(status.message.find("thread (40,0,0) writes it and thread (0,0,0) wrote it"),
            std::string::npos)
      << status.message;
}

// Lanes of one warp pass values through shared memory: ordered by __syncwarp, a race without.
template <bool with_syncwarp>
__global__ void warp_exchange(int* out) {
  AT_LINE(g_line, TERN_SHARED(int, lanes, 32));
  lanes[threadIdx.x] = static_cast<int>(threadIdx.x) * 3;
  if (with_syncwarp) __syncwarp();
  out[threadIdx.x] = lanes[31 - threadIdx.x];
}

TEST(SimtBarrier, SyncwarpOrdersSharedAccessesWithinAWarp) {
  for (Schedule schedule : kAllSchedules) {
    DeviceVector<int> out(32, 0);
    ASSERT_TRUE(
        launch("warp_exchange", config_of(1, 32, schedule), warp_exchange<true>, out.data()).ok());
    for (int t = 0; t < 32; ++t) EXPECT_EQ(out[t], (31 - t) * 3);
    expect_fault(
        launch("warp_exchange", config_of(1, 32, schedule), warp_exchange<false>, out.data()),
        LaunchErrorKind::shared_race, "warp_exchange", "barrier_test.cpp", g_line);
  }
}

__global__ void divergent_barrier(int* out) {
  if (threadIdx.x < 16) {
    AT_LINE(g_line, __syncthreads());
  } else {
    AT_LINE(g_other_line, __syncthreads());
  }
  out[threadIdx.x] = 1;
}

TEST(SimtBarrier, BarrierFromTwoCallSitesIsAnError) {
  DeviceVector<int> out(64, 0);
  for (Schedule schedule : kAllSchedules) {
    const LaunchStatus status =
        launch("divergent_barrier", config_of(2, 64, schedule), divergent_barrier, out.data());
    expect_fault(status, LaunchErrorKind::divergent_barrier, "divergent_barrier",
                 "barrier_test.cpp", g_line);
    EXPECT_NE(status.message.find("barrier_test.cpp:" + std::to_string(g_other_line)),
              std::string::npos)
        << status.message;
  }
}

__global__ void early_return(int* out) {
  if (threadIdx.x == 37) return;
  AT_LINE(g_line, __syncthreads());
  out[threadIdx.x] = 1;
}

TEST(SimtBarrier, ThreadThatReturnsWhileOthersWaitIsAnError) {
  DeviceVector<int> out(64, 0);
  for (Schedule schedule : kAllSchedules) {
    const LaunchStatus status =
        launch("early_return", config_of(1, 64, schedule), early_return, out.data());
    expect_fault(status, LaunchErrorKind::barrier_not_reached, "early_return", "barrier_test.cpp",
                 g_line);
    EXPECT_NE(status.message.find("thread (37,0,0) returned"), std::string::npos) << status.message;
  }
}

}  // namespace
}  // namespace tern::simt

namespace tern::simt {
namespace {

// Each thread takes a ticket before and after a barrier: the order the schedule ran them in.
__global__ void take_tickets(int* counter, int* before, int* after) {
  before[threadIdx.x] = atomicAdd(counter, 1);
  __syncthreads();
  after[threadIdx.x] = atomicAdd(counter, 1) - static_cast<int>(blockDim.x);
}

DeviceVector<int> tickets(Schedule schedule, std::uint64_t seed, bool after_barrier) {
  LaunchConfig config = config_of(1, 40, schedule);
  config.seed = seed;
  DeviceValue<int> counter(0);
  DeviceVector<int> before(40), after(40);
  EXPECT_TRUE(
      launch("take_tickets", config, take_tickets, counter.ptr(), before.data(), after.data())
          .ok());
  return after_barrier ? after : before;
}

TEST(SimtSchedule, ForwardReverseAndSeededRandomOrders) {
  DeviceVector<int> forward(40), reverse(40);
  for (int t = 0; t < 40; ++t) {
    forward[t] = t;
    reverse[t] = 39 - t;
  }
  EXPECT_EQ(tickets(Schedule::forward, 0, false), forward);
  EXPECT_EQ(tickets(Schedule::forward, 0, true), forward);
  EXPECT_EQ(tickets(Schedule::reverse, 0, false), reverse);
  EXPECT_EQ(tickets(Schedule::reverse, 0, true), reverse);
  const DeviceVector<int> random = tickets(Schedule::random, 1, false);
  EXPECT_NE(random, forward);
  EXPECT_NE(random, reverse);
  EXPECT_TRUE(std::is_permutation(random.begin(), random.end(), forward.begin()));
  EXPECT_EQ(tickets(Schedule::random, 1, false), random);  // the seed fixes the order
  EXPECT_NE(tickets(Schedule::random, 2, false), random);
  EXPECT_NE(tickets(Schedule::random, 1, true), random);  // reshuffled after the barrier
}

}  // namespace
}  // namespace tern::simt
