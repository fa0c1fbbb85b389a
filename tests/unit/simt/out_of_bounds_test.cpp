// Global memory bounds on the emulated device: allocations keep their exact size between guard
// bands, a kernel that writes past (or before) its buffer fails its launch naming the kernel, the
// allocation and the argument, and copies outside one allocation are refused. Under ASan the
// bands are poisoned, so ASan itself stops the stray write (checked as a death test there).

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_api.h"
#include "kernels/simt/asan.h"
#include "kernels/simt/device_memory.h"
#include "kernels/simt/portable.h"
#include "tests/unit/simt/simt_test_support.h"

namespace tern::simt {
namespace {

// out[i] = in[i] for i < n, and thread n writes out[n + offset]: offset 0 is one past the end.
__global__ void copy_and_stray(const float* in, float* out, int n, int offset) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i];
  if (i == n) out[n + offset] = 1.0f;
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

TEST(SimtOutOfBounds, AllocationsKeepTheirExactSize) {
  auto* memory = static_cast<unsigned char*>(device_allocate(100, "a hundred bytes"));
  ASSERT_NE(memory, nullptr);
  EXPECT_TRUE(is_device_range(memory, 100));
  EXPECT_TRUE(is_device_range(memory + 100, 0));
  EXPECT_FALSE(is_device_range(memory, 101));
  EXPECT_FALSE(is_device_range(memory + 50, 51));
  EXPECT_FALSE(is_device_address(memory + 101));  // no rounding up to 256
  EXPECT_FALSE(is_device_address(memory - 1));
  EXPECT_FALSE(check_guard_bands().has_value());
  EXPECT_TRUE(device_free(memory));
}

TEST(SimtOutOfBounds, CopiesAndFillsOutsideOneAllocationAreRefused) {
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 60), cudaSuccess);
  std::vector<unsigned char> host(64, 3);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 60, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 61, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), device, 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(device, 0, 61), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(static_cast<char*>(device) + 10, 0, 50), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

// The kernel runs in every schedule; under ASan the write stops the process at once instead.
[[maybe_unused]] void expect_stray_write_fails(int n, int offset, const std::string& changed) {
  DeviceBuffer<float> in(static_cast<std::size_t>(n));
  auto* raw = static_cast<float*>(
      device_allocate(static_cast<std::size_t>(n) * sizeof(float), "the copy's output"));
  ASSERT_NE(raw, nullptr);
  for (Schedule schedule : kAllSchedules) {
    const LaunchStatus status = launch("copy_and_stray", config_of(2, 64, schedule), copy_and_stray,
                                       in.data(), raw, n, offset);
    ASSERT_EQ(status.kind, LaunchErrorKind::out_of_bounds) << status.message;
    expect_contains(status.message, "kernel 'copy_and_stray': out-of-bounds write");
    expect_contains(status.message, "device allocation 'the copy's output' of " +
                                        std::to_string(n * 4) + " bytes at 0x");
    expect_contains(status.message, changed);
    expect_contains(status.message, "; argument 1 points into it");
    expect_contains(status.message, "schedule, seed ");
    // The band was restored: the next launch is not blamed for it.
    EXPECT_FALSE(check_guard_bands().has_value());
    const LaunchStatus in_bounds = launch("copy_and_stray", config_of(2, 64, schedule),
                                          copy_and_stray, in.data(), raw, n, -n);  // out[0]
    EXPECT_TRUE(in_bounds.ok()) << in_bounds.message;
  }
  EXPECT_TRUE(device_free(raw));
}

#if defined(TERN_SIMT_ASAN)
TEST(SimtOutOfBounds, AsanStopsAWriteIntoAGuardBand) {
  DeviceBuffer<float> in(100);
  DeviceBuffer<float> out(100);
  EXPECT_DEATH(static_cast<void>(launch("copy_and_stray", config_of(2, 64), copy_and_stray,
                                        in.data(), out.data(), 100, 0)),
               "use-after-poison");
}
#else
TEST(SimtOutOfBounds, AWritePastTheEndFailsTheLaunchNamingKernelAllocationAndArgument) {
  expect_stray_write_fails(100, 0, "bytes 0 to 3 past its end changed");
  expect_stray_write_fails(100, 10, "bytes 40 to 43 past its end changed");
}

TEST(SimtOutOfBounds, AWriteBeforeTheStartFailsTheLaunch) {
  expect_stray_write_fails(100, -101,
                           "out-of-bounds write before the start of device allocation 'the "
                           "copy's output' of 400 bytes");
  expect_stray_write_fails(100, -101, "bytes 1 to 4 before its start changed");
}

// Host code writing past an allocation is found when it is freed (no launch to fail there).
TEST(SimtOutOfBounds, AHostWritePastTheEndIsFoundAtFree) {
  const std::size_t before = guard_violations_at_free();
  auto* memory = static_cast<unsigned char*>(device_allocate(10));
  ASSERT_NE(memory, nullptr);
  memory[10] = 0;
  EXPECT_TRUE(device_free(memory));
  EXPECT_EQ(guard_violations_at_free(), before + 1);
}
#endif

}  // namespace
}  // namespace tern::simt
