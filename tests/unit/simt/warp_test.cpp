#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/simt/device_memory.h"
#include "kernels/simt/portable.h"
#include "tests/unit/simt/simt_test_support.h"

namespace tern::simt {
namespace {

int g_line = 0;

// Every shuffle of one type at width 32 and 8; results land in out[kind * n + thread].
template <class T>
__global__ void shuffles(T* out) {
  const unsigned t = threadIdx.x;
  const unsigned n = blockDim.x;
  const T value = static_cast<T>(t * 3 + 1);
  out[0 * n + t] = __shfl_sync(0xffffffffu, value, 5);
  out[1 * n + t] = __shfl_up_sync(0xffffffffu, value, 3);
  out[2 * n + t] = __shfl_down_sync(0xffffffffu, value, 3);
  out[3 * n + t] = __shfl_xor_sync(0xffffffffu, value, 9);
  out[4 * n + t] = __shfl_sync(0xffffffffu, value, 5, 8);
  out[5 * n + t] = __shfl_up_sync(0xffffffffu, value, 3, 8);
  out[6 * n + t] = __shfl_down_sync(0xffffffffu, value, 3, 8);
  out[7 * n + t] = __shfl_xor_sync(0xffffffffu, value, 2, 8);
}

// What each lane of a full warp reads, by CUDA's definitions.
unsigned expected_source(int kind, unsigned lane) {
  const unsigned width = kind < 4 ? 32 : 8;
  const unsigned segment = lane / width * width;
  switch (kind % 4) {
    case 0:
      return segment + 5 % width;
    case 1:
      return lane - segment >= 3 ? lane - 3 : lane;
    case 2:
      return lane - segment + 3 < width ? lane + 3 : lane;
    default: {
      const unsigned source = lane ^ (kind < 4 ? 9u : 2u);
      return source >= segment + width ? lane : source;
    }
  }
}

template <class T>
void check_shuffles() {
  const unsigned n = 64;
  for (Schedule schedule : kAllSchedules) {
    DeviceVector<T> out(8 * n);
    ASSERT_TRUE(launch("shuffles", config_of(1, n, schedule), shuffles<T>, out.data()).ok());
    for (int kind = 0; kind < 8; ++kind)
      for (unsigned t = 0; t < n; ++t) {
        const unsigned source = t / 32 * 32 + expected_source(kind, t % 32);
        EXPECT_EQ(out[kind * n + t], static_cast<T>(source * 3 + 1)) << kind << " lane " << t;
      }
  }
}

TEST(SimtWarp, ShufflesOfEveryTypeHonourWidth) {
  check_shuffles<int>();
  check_shuffles<unsigned>();
  check_shuffles<float>();
  check_shuffles<double>();
  check_shuffles<long long>();
  check_shuffles<unsigned long long>();
}

TEST(SimtWarp, SixtyFourBitValuesKeepTheirHighBits) {
  struct Kernel {
    static __global__ void run(std::int64_t* out) {
      const std::int64_t value = (std::int64_t{1} << 40) * (threadIdx.x + 1) - 7;
      out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, value, 1);
    }
  };
  DeviceVector<std::int64_t> out(32);
  ASSERT_TRUE(launch("run", config_of(1, 32), Kernel::run, out.data()).ok());
  for (unsigned t = 0; t < 32; ++t) EXPECT_EQ(out[t], (std::int64_t{1} << 40) * ((t ^ 1) + 1) - 7);
}

__global__ void votes(unsigned* out) {
  const unsigned t = threadIdx.x;
  const int odd = t % 2;
  // Before any lane can have returned (all must pass the ballot first): every existing lane.
  out[t * 5 + 4] = __activemask();
  out[t * 5 + 0] = __ballot_sync(0xffffffffu, odd);
  out[t * 5 + 1] = static_cast<unsigned>(__any_sync(0xffffffffu, t == 7));
  out[t * 5 + 2] = static_cast<unsigned>(__all_sync(0xffffffffu, odd));
  out[t * 5 + 3] = static_cast<unsigned>(__all_sync(0xffffffffu, t < 1000));
  __syncwarp();
}

TEST(SimtWarp, VotesOnFullAndPartialWarps) {
  const unsigned n = 40;  // a full warp and one of 8 lanes
  DeviceVector<unsigned> out(n * 5);
  ASSERT_TRUE(launch("votes", config_of(1, n), votes, out.data()).ok());
  for (unsigned t = 0; t < n; ++t) {
    const bool partial = t >= 32;
    EXPECT_EQ(out[t * 5 + 0], partial ? 0xaau : 0xaaaaaaaau) << t;
    EXPECT_EQ(out[t * 5 + 1], partial ? 0u : 1u) << t;
    EXPECT_EQ(out[t * 5 + 2], 0u) << t;
    EXPECT_EQ(out[t * 5 + 3], 1u) << t;
    EXPECT_EQ(out[t * 5 + 4], partial ? 0xffu : 0xffffffffu) << t;
  }
}

// Sum of a block of any size: warp shuffles, then the warps' sums through shared memory.
__global__ void block_sum(const float* in, float* out) {
  TERN_SHARED(float, warp_sums, 32);
  const unsigned t = threadIdx.x;
  const unsigned lane = t % 32;
  const unsigned warps = (blockDim.x + 31) / 32;
  const unsigned lanes_here = t / 32 == warps - 1 ? blockDim.x - t / 32 * 32 : 32;
  const unsigned mask = lanes_here == 32 ? 0xffffffffu : (1u << lanes_here) - 1;
  float sum = in[t];
  for (unsigned offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_down_sync(mask, sum, offset);
    if (lane + offset < lanes_here) sum += other;
  }
  if (lane == 0) warp_sums[t / 32] = sum;
  __syncthreads();
  if (t == 0) {
    float total = 0;
    for (unsigned w = 0; w < warps; ++w) total += warp_sums[w];
    out[0] = total;
  }
}

TEST(SimtWarp, ReductionOnPartialWarpsIsRight) {
  for (unsigned n : {1u, 5u, 32u, 33u, 70u, 255u}) {
    DeviceVector<float> in(n);
    float expected = 0;
    for (unsigned i = 0; i < n; ++i) expected += in[i] = static_cast<float>(i % 7);
    for (Schedule schedule : kAllSchedules) {
      DeviceValue<float> out(-1);
      ASSERT_TRUE(
          launch("block_sum", config_of(1, n, schedule), block_sum, in.data(), out.ptr()).ok());
      EXPECT_EQ(*out, expected) << n;
    }
  }
}

// Inclusive scan within each warp (Hillis-Steele with __shfl_up_sync).
__global__ void warp_scan(const int* in, int* out) {
  const unsigned t = threadIdx.x;
  const unsigned lane = t % 32;
  const unsigned lanes_here = blockDim.x - t / 32 * 32 < 32 ? blockDim.x - t / 32 * 32 : 32;
  const unsigned mask = lanes_here == 32 ? 0xffffffffu : (1u << lanes_here) - 1;
  int value = in[t];
  for (unsigned offset = 1; offset < 32; offset *= 2) {
    const int other = __shfl_up_sync(mask, value, offset);
    if (lane >= offset) value += other;
  }
  out[t] = value;
}

TEST(SimtWarp, ScanOnPartialWarpsIsRight) {
  for (unsigned n : {3u, 32u, 45u}) {
    DeviceVector<int> in(n), out(n);
    for (unsigned i = 0; i < n; ++i) in[i] = static_cast<int>(i * 7 % 5) - 2;
    for (Schedule schedule : kAllSchedules) {
      ASSERT_TRUE(
          launch("warp_scan", config_of(1, n, schedule), warp_scan, in.data(), out.data()).ok());
      int running = 0;
      for (unsigned i = 0; i < n; ++i) {
        if (i % 32 == 0) running = 0;
        running += in[i];
        EXPECT_EQ(out[i], running) << n << " " << i;
      }
    }
  }
}

// Lanes 16..31 leave before the shuffle whose mask names them.
__global__ void shuffle_with_wrong_mask(float* out) {
  if (threadIdx.x >= 16) return;
  float value = static_cast<float>(threadIdx.x);
  AT_LINE(g_line, value += __shfl_xor_sync(0xffffffffu, value, 1));
  out[threadIdx.x] = value;
}

TEST(SimtWarp, LaneNamedInTheMaskThatDoesNotArriveIsAnError) {
  DeviceVector<float> out(32);
  for (Schedule schedule : kAllSchedules) {
    const LaunchStatus status = launch("shuffle_with_wrong_mask", config_of(1, 32, schedule),
                                       shuffle_with_wrong_mask, out.data());
    expect_fault(status, LaunchErrorKind::warp_mask, "shuffle_with_wrong_mask", "warp_test.cpp",
                 g_line);
    EXPECT_NE(status.message.find("returned without arriving"), std::string::npos)
        << status.message;
  }
}

// Lane 5 goes to the block barrier while its warp waits for it at a shuffle.
__global__ void lane_at_barrier_instead(int* out) {
  if (threadIdx.x == 5) {
    __syncthreads();
  } else {
    AT_LINE(g_line, out[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0));
    __syncthreads();
  }
}

TEST(SimtWarp, LaneAtTheBlockBarrierInsteadOfTheShuffleIsAnError) {
  DeviceVector<int> out(32);
  for (Schedule schedule : kAllSchedules) {
    const LaunchStatus status = launch("lane_at_barrier_instead", config_of(1, 32, schedule),
                                       lane_at_barrier_instead, out.data());
    expect_fault(status, LaunchErrorKind::warp_mask, "lane_at_barrier_instead", "warp_test.cpp",
                 g_line);
    EXPECT_NE(status.message.find("lane 5 named in the mask waits at __syncthreads"),
              std::string::npos)
        << status.message;
  }
}

__global__ void mask_without_self(int* out) {
  AT_LINE(g_line, out[threadIdx.x] = __shfl_sync(0x0000fffeu, 1, 1));
}

TEST(SimtWarp, MaskThatLeavesOutTheCallingLaneIsAnError) {
  DeviceVector<int> out(32);
  const LaunchStatus status =
      launch("mask_without_self", config_of(1, 32), mask_without_self, out.data());
  expect_fault(status, LaunchErrorKind::warp_mask, "mask_without_self", "warp_test.cpp", g_line);
  EXPECT_NE(status.message.find("does not name the calling lane 0"), std::string::npos)
      << status.message;
}

__global__ void masks_disagree(int* out) {
  const unsigned mask = threadIdx.x == 3 ? 0x0000ffffu : 0xffffffffu;
  AT_LINE(g_line, out[threadIdx.x] = __ballot_sync(mask, 1));
}

TEST(SimtWarp, LanesWithDifferentMasksAreAnError) {
  DeviceVector<int> out(32);
  const LaunchStatus status =
      launch("masks_disagree", config_of(1, 32), masks_disagree, out.data());
  expect_fault(status, LaunchErrorKind::warp_mask, "masks_disagree", "warp_test.cpp", g_line);
}

__global__ void bad_width(int* out) {
  AT_LINE(g_line, out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1, 12));
}

TEST(SimtWarp, WidthThatIsNotAPowerOfTwoIsAnError) {
  DeviceVector<int> out(32);
  const LaunchStatus status = launch("bad_width", config_of(1, 32), bad_width, out.data());
  expect_fault(status, LaunchErrorKind::invalid_argument, "bad_width", "warp_test.cpp", g_line);
}

}  // namespace
}  // namespace tern::simt
