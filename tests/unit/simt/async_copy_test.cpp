// cp.async on the emulator (kernels/simt/async_copy.h): copies land when their group is waited
// for, and only the committed groups older than the newest N; touching the bytes of a copy in
// flight, ending with one, or misaligning either end fails the launch naming the cp.async.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kernels/simt/async_copy.h"
#include "kernels/simt/device_memory.h"
#include "kernels/simt/portable.h"
#include "tests/unit/simt/simt_test_support.h"

namespace tern::simt {
namespace {

using kernels::cuda::AsyncCache;

int g_line = 0;

// 32 threads stage 32 x 16 bytes of `in` through shared memory: thread t copies its 16 bytes
// with one .cg copy, two .ca copies of 8 or four of 4 (by t % 3), then the block reads them back
// reversed after waiting and a barrier.
__global__ void stage(const std::uint32_t* in, std::uint32_t* out) {
  TERN_SHARED(std::uint32_t, tile, 128);
  const unsigned t = threadIdx.x;
  const std::uint32_t* source = in + t * 4;
  if (t % 3 == 0) {
    kernels::cuda::cp_async<16, AsyncCache::global_only>(tile, t * 4, source);
  } else if (t % 3 == 1) {
    kernels::cuda::cp_async<8>(tile, t * 4, source);
    kernels::cuda::cp_async<8>(tile, t * 4 + 2, source + 2);
  } else {
    for (unsigned i = 0; i < 4; ++i) kernels::cuda::cp_async<4>(tile, t * 4 + i, source + i);
  }
  kernels::cuda::cp_async_commit_group();
  kernels::cuda::cp_async_wait_group<0>();
  __syncthreads();
  for (unsigned i = 0; i < 4; ++i) out[t * 4 + i] = tile[(31 - t) * 4 + i];
}

TEST(SimtAsyncCopy, CopiesLandWhenTheirGroupIsWaitedFor) {
  DeviceVector<std::uint32_t> in(128), out(128, 0);
  for (unsigned i = 0; i < 128; ++i) in[i] = 1000 + i;
  for (Schedule schedule : kAllSchedules) {
    ASSERT_TRUE(launch("stage", config_of(1, 32, schedule), stage, in.data(), out.data()).ok());
    for (unsigned t = 0; t < 32; ++t)
      for (unsigned i = 0; i < 4; ++i) EXPECT_EQ(out[t * 4 + i], 1000 + (31 - t) * 4 + i);
  }
}

// Two groups in flight; waiting down to one completes the older only, so its bytes may be read
// and the newer's may not.
template <bool read_newer>
__global__ void two_groups(const std::uint32_t* in, std::uint32_t* out) {
  TERN_SHARED(std::uint32_t, tile, 8);
  if (threadIdx.x == 0) {
    kernels::cuda::cp_async<16>(tile, 0, in);
    kernels::cuda::cp_async_commit_group();
    AT_LINE(g_line, kernels::cuda::cp_async<16>(tile, 4, in + 4));
    kernels::cuda::cp_async_commit_group();
    kernels::cuda::cp_async_wait_group<1>();
    out[0] = tile[read_newer ? 4 : 0];
    kernels::cuda::cp_async_wait_group<0>();
    out[1] = tile[4];
  }
}

TEST(SimtAsyncCopy, WaitingDownToOneGroupCompletesTheOlderOnly) {
  DeviceVector<std::uint32_t> in(8), out(2, 0);
  for (unsigned i = 0; i < 8; ++i) in[i] = 7 + i;
  ASSERT_TRUE(
      launch("two_groups", config_of(1, 32), two_groups<false>, in.data(), out.data()).ok());
  EXPECT_EQ(out[0], 7u);
  EXPECT_EQ(out[1], 11u);
  const LaunchStatus status =
      launch("two_groups", config_of(1, 32), two_groups<true>, in.data(), out.data());
  expect_fault(status, LaunchErrorKind::async_copy_pending, "two_groups", "async_copy_test.cpp",
               g_line);
  EXPECT_NE(status.message.find("reads element 4 of shared array 'tile' while the cp.async"),
            std::string::npos)
      << status.message;
}

// Forgetting the wait: the read after the barrier still finds the copy in flight.
__global__ void read_without_waiting(const std::uint32_t* in, std::uint32_t* out) {
  TERN_SHARED(std::uint32_t, tile, 4);
  if (threadIdx.x == 0) {
    AT_LINE(g_line, kernels::cuda::cp_async<16>(tile, 0, in));
    kernels::cuda::cp_async_commit_group();
  }
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x % 4];
}

TEST(SimtAsyncCopy, ReadingBeforeTheWaitIsAnErrorEvenAfterABarrier) {
  DeviceVector<std::uint32_t> in(4, 1), out(32);
  const LaunchStatus status =
      launch("read_without_waiting", config_of(1, 32), read_without_waiting, in.data(), out.data());
  expect_fault(status, LaunchErrorKind::async_copy_pending, "read_without_waiting",
               "async_copy_test.cpp", g_line);
}

// Waiting without committing: wait_group waits for committed groups only.
__global__ void wait_without_commit(const std::uint32_t* in, std::uint32_t* out) {
  TERN_SHARED(std::uint32_t, tile, 4);
  if (threadIdx.x == 0) {
    AT_LINE(g_line, kernels::cuda::cp_async<16>(tile, 0, in));
    kernels::cuda::cp_async_wait_group<0>();
    out[0] = tile[0];
  }
}

TEST(SimtAsyncCopy, WaitingLeavesUncommittedCopiesInFlight) {
  DeviceVector<std::uint32_t> in(4, 1), out(1);
  const LaunchStatus status =
      launch("wait_without_commit", config_of(1, 32), wait_without_commit, in.data(), out.data());
  expect_fault(status, LaunchErrorKind::async_copy_pending, "wait_without_commit",
               "async_copy_test.cpp", g_line);
}

__global__ void never_waited(const std::uint32_t* in) {
  TERN_SHARED(std::uint32_t, tile, 4);
  if (threadIdx.x == 0) {
    AT_LINE(g_line, kernels::cuda::cp_async<16>(tile, 0, in));
    kernels::cuda::cp_async_commit_group();
  }
}

TEST(SimtAsyncCopy, EndingWithACopyInFlightIsAnError) {
  DeviceVector<std::uint32_t> in(4, 1);
  const LaunchStatus status = launch("never_waited", config_of(1, 32), never_waited, in.data());
  expect_fault(status, LaunchErrorKind::async_copy_pending, "never_waited", "async_copy_test.cpp",
               g_line);
  EXPECT_NE(status.message.find("never waited for"), std::string::npos) << status.message;
}

template <bool misalign_source>
__global__ void misaligned_copy(const std::uint32_t* in, std::uint32_t* out) {
  TERN_SHARED(std::uint32_t, tile, 8);
  if (threadIdx.x == 0) {
    AT_LINE(g_line, kernels::cuda::cp_async<16>(tile, misalign_source ? 0 : 1,
                                                misalign_source ? in + 1 : in));
    kernels::cuda::cp_async_commit_group();
    kernels::cuda::cp_async_wait_group<0>();
    out[0] = tile[1];
  }
}

TEST(SimtAsyncCopy, MisalignedEitherEndIsAnError) {
  DeviceVector<std::uint32_t> in(8, 1), out(1);
  LaunchStatus status =
      launch("misaligned_copy", config_of(1, 32), misaligned_copy<true>, in.data(), out.data());
  expect_fault(status, LaunchErrorKind::misaligned_access, "misaligned_copy", "async_copy_test.cpp",
               g_line);
  EXPECT_NE(status.message.find("from a global address"), std::string::npos) << status.message;
  status =
      launch("misaligned_copy", config_of(1, 32), misaligned_copy<false>, in.data(), out.data());
  expect_fault(status, LaunchErrorKind::misaligned_access, "misaligned_copy", "async_copy_test.cpp",
               g_line);
  EXPECT_NE(status.message.find("of shared array 'tile'"), std::string::npos) << status.message;
}

// Another thread reads the landed bytes after the wait but with no barrier: a race, as for any
// write.
__global__ void read_landed_without_barrier(const std::uint32_t* in, std::uint32_t* out) {
  AT_LINE(g_line, TERN_SHARED(std::uint32_t, tile, 4));
  if (threadIdx.x == 0) {
    kernels::cuda::cp_async<16>(tile, 0, in);
    kernels::cuda::cp_async_commit_group();
    kernels::cuda::cp_async_wait_group<0>();
  }
  if (threadIdx.x == 33) out[0] = tile[0];
}

TEST(SimtAsyncCopy, OtherThreadsStillNeedABarrier) {
  DeviceVector<std::uint32_t> in(4, 1), out(1);
  const LaunchStatus status = launch("read_landed_without_barrier", config_of(1, 64),
                                     read_landed_without_barrier, in.data(), out.data());
  expect_fault(status, LaunchErrorKind::shared_race, "read_landed_without_barrier",
               "async_copy_test.cpp", g_line);
}

}  // namespace
}  // namespace tern::simt
