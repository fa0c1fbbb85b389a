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
int g_other_line = 0;

// Only the first half of the block writes its slot; every thread reads its own slot after the
// barrier, so the second half reads shared memory that nothing wrote.
__global__ void half_written(float* out) {
  AT_LINE(g_line, TERN_SHARED(float, slots, 64));
  if (threadIdx.x < 32) slots[threadIdx.x] = 1.0f;
  AT_LINE(g_other_line, __syncthreads());
  out[threadIdx.x] = slots[threadIdx.x] * 2.0f;
}

TEST(SimtSharedMemory, ReadBeforeAnyWriteIsAnError) {
  for (Schedule schedule : kAllSchedules) {
    DeviceVector<float> out(64);
    const LaunchStatus status =
        launch("half_written", config_of(1, 64, schedule), half_written, out.data());
    expect_fault(status, LaunchErrorKind::uninitialized_shared, "half_written",
                 "shared_memory_test.cpp", g_line);
    EXPECT_NE(status.message.find("of shared array 'slots', which no thread of the block has "
                                  "written since the __syncthreads at "),
              std::string::npos)
        << status.message;
    EXPECT_NE(status.message.find("shared_memory_test.cpp:" + std::to_string(g_other_line)),
              std::string::npos)
        << status.message;
  }
}

// Block 0 writes the slot and reads it back; later blocks only read it.
__global__ void read_previous_block(std::uint32_t* out) {
  TERN_SHARED(std::uint32_t, slot, 1);
  if (blockIdx.x == 0 && threadIdx.x == 0) slot[0] = 42;
  __syncthreads();
  out[blockIdx.x] = slot[0];
}

TEST(SimtSharedMemory, EachBlockStartsFromFreshUnwrittenMemory) {
  DeviceVector<std::uint32_t> out(3);
  const LaunchStatus status =
      launch("read_previous_block", config_of(3, 32), read_previous_block, out.data());
  EXPECT_EQ(status.kind, LaunchErrorKind::uninitialized_shared) << status.message;
  // Whichever order the blocks run in, the one that fails is one that did not write the slot.
  EXPECT_EQ(status.message.find("block (0,0,0)"), std::string::npos) << status.message;
  EXPECT_NE(status.message.find(", block ("), std::string::npos) << status.message;
  // Alone, block 0 reads back what it wrote.
  ASSERT_TRUE(
      launch("read_previous_block", config_of(1, 32), read_previous_block, out.data()).ok());
  EXPECT_EQ(out[0], 42u);
}

// Reverses a row through dynamic shared memory, next to a static array.
__global__ void reverse_row(const int* in, int* out) {
  TERN_DYNAMIC_SHARED(int, row);
  TERN_SHARED(int, marker, 4);
  const unsigned t = threadIdx.x;
  row[t] = in[blockIdx.x * blockDim.x + t];
  if (t < 4) marker[t] = -7;
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = row[blockDim.x - 1 - t] + marker[t % 4] + 7;
}

TEST(SimtSharedMemory, DynamicSharedMemoryIsPerBlockAndApartFromStatic) {
  const unsigned n = 50;
  DeviceVector<int> in(2 * n), out(2 * n);
  for (unsigned i = 0; i < 2 * n; ++i) in[i] = static_cast<int>(i);
  for (Schedule schedule : kAllSchedules) {
    ASSERT_TRUE(launch("reverse_row", config_of(2, n, schedule, n * sizeof(int)), reverse_row,
                       in.data(), out.data())
                    .ok());
    for (unsigned b = 0; b < 2; ++b)
      for (unsigned t = 0; t < n; ++t) EXPECT_EQ(out[b * n + t], in[b * n + n - 1 - t]);
  }
}

// The dynamic array holds exactly the launch's bytes: one element past them is out of bounds.
__global__ void past_dynamic_end(int* out) {
  AT_LINE(g_line, TERN_DYNAMIC_SHARED(int, row));
  row[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = row[threadIdx.x + 1];
}

TEST(SimtSharedMemory, IndexOutsideASharedArrayIsAnError) {
  DeviceVector<int> out(8);
  const LaunchStatus status = launch("past_dynamic_end", config_of(1, 8, Schedule::forward, 32),
                                     past_dynamic_end, out.data());
  expect_fault(status, LaunchErrorKind::invalid_argument, "past_dynamic_end",
               "shared_memory_test.cpp", g_line);
  EXPECT_NE(status.message.find("index 8 is outside shared array 'row' of 8 elements"),
            std::string::npos)
      << status.message;
}

__global__ void big_static(int* out) {
  AT_LINE(g_line, TERN_SHARED(char, bytes, 40 * 1024));
  if (threadIdx.x == 0) bytes[0] = 1;
  if (threadIdx.x == 0) out[0] = bytes[0];
}

TEST(SimtSharedMemory, StaticPlusDynamicOverTheLimitIsAnError) {
  DeviceValue<int> out(0);
  LaunchConfig config = config_of(1, 32, Schedule::forward, 16 * 1024);
  LaunchStatus status = launch("big_static", config, big_static, out.ptr());
  expect_fault(status, LaunchErrorKind::shared_limit, "big_static", "shared_memory_test.cpp",
               g_line);

  // The opt-in raises the limit, up to the architecture's maximum.
  config.shared_limit_bytes = 100 * 1024;
  EXPECT_TRUE(launch("big_static", config, big_static, out.ptr()).ok());
  config.dynamic_shared_bytes = 120 * 1024;
  config.shared_limit_bytes = 163 * 1024;
  config.sm = 80;
  EXPECT_TRUE(launch("big_static", config, big_static, out.ptr()).ok());
  config.shared_limit_bytes = 164 * 1024;
  EXPECT_EQ(launch("big_static", config, big_static, out.ptr()).kind,
            LaunchErrorKind::invalid_config);
  config.sm = 90;
  config.shared_limit_bytes = 227 * 1024;
  config.dynamic_shared_bytes = 180 * 1024;
  EXPECT_TRUE(launch("big_static", config, big_static, out.ptr()).ok());
  config.shared_limit_bytes = 228 * 1024;
  EXPECT_EQ(launch("big_static", config, big_static, out.ptr()).kind,
            LaunchErrorKind::invalid_config);
  config.shared_limit_bytes = kDefaultSharedLimit;
  config.dynamic_shared_bytes = kDefaultSharedLimit + 1;
  EXPECT_EQ(launch("big_static", config, big_static, out.ptr()).kind,
            LaunchErrorKind::invalid_config);
}

__global__ void atomics(const int* values, int* sum, int* maximum, int* exchanged,
                        unsigned long long* cas_counter, float* float_sum, int* histogram) {
  TERN_SHARED(int, bins, 4);
  const unsigned t = threadIdx.x;
  if (t < 4) bins[t] = 0;
  __syncthreads();
  const int value = values[blockIdx.x * blockDim.x + t];
  atomicAdd(sum, value);
  atomicMax(maximum, value);
  atomicExch(exchanged, 5);
  atomicAdd(float_sum, 0.5f);
  unsigned long long seen = *cas_counter;
  while (true) {
    const unsigned long long previous = atomicCAS(cas_counter, seen, seen + 2);
    if (previous == seen) break;
    seen = previous;
  }
  atomicAdd(&bins[value & 3], 1);
  __syncthreads();
  if (t < 4) atomicAdd(&histogram[t], bins[t]);
}

TEST(SimtAtomics, SharedAndGlobalAtomicsAcrossBlocks) {
  const unsigned blocks = 4, threads = 100;
  DeviceVector<int> values(blocks * threads);
  for (unsigned i = 0; i < values.size(); ++i) values[i] = static_cast<int>(i * 37 % 1001);
  for (Schedule schedule : kAllSchedules) {
    DeviceValue<int> sum(0), maximum(-1), exchanged(0);
    DeviceValue<unsigned long long> counter(0);
    DeviceValue<float> float_sum(0);
    DeviceVector<int> histogram(4, 0);
    ASSERT_TRUE(launch("atomics", config_of(blocks, threads, schedule), atomics, values.data(),
                       sum.ptr(), maximum.ptr(), exchanged.ptr(), counter.ptr(), float_sum.ptr(),
                       histogram.data())
                    .ok());
    int expected_sum = 0, expected_max = -1;
    DeviceVector<int> expected_histogram(4, 0);
    for (int v : values) {
      expected_sum += v;
      expected_max = std::max(expected_max, v);
      ++expected_histogram[v & 3];
    }
    EXPECT_EQ(*sum, expected_sum);
    EXPECT_EQ(*maximum, expected_max);
    EXPECT_EQ(*exchanged, 5);
    EXPECT_EQ(*counter, 2ull * values.size());
    EXPECT_EQ(*float_sum, 0.5f * static_cast<float>(values.size()));
    EXPECT_EQ(histogram, expected_histogram);
  }
}

// Records which thread wrote last, to see the schedule TERN_LAUNCH ran under.
__global__ void last_writer(int* out, int offset) {
  *out = static_cast<int>(threadIdx.x) + offset;
}

TEST(SimtLaunchMacro, RunsUnderTheScopedScheduleAndReportsItsStatus) {
  DeviceValue<int> out(-1);
  {
    const ScopedSchedule reverse(Schedule::reverse, 0);
    TERN_LAUNCH(last_writer, dim3(1), dim3(8), 0, nullptr, out.ptr(), 100);
  }
  EXPECT_TRUE(last_launch_status().ok());
  EXPECT_EQ(*out, 100);  // thread 0 ran last
  TERN_LAUNCH(last_writer, dim3(1), dim3(8), 0, nullptr, out.ptr(), 100);
  EXPECT_EQ(*out, 107);  // forward: thread 7 ran last
  TERN_LAUNCH(last_writer, dim3(1), dim3(2000), 0, nullptr, out.ptr(), 0);
  EXPECT_EQ(last_launch_status().kind, LaunchErrorKind::invalid_config);
  EXPECT_NE(last_launch_status().message.find("kernel 'last_writer'"), std::string::npos);
}

}  // namespace
}  // namespace tern::simt
