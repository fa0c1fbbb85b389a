// The emulated device: pointer arguments checked against its memory, aligned vector accesses,
// half and bfloat16 values, __dp4a and the fast-math intrinsics, and the CUDA runtime API over it.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_api.h"
#include "kernels/simt/device_memory.h"
#include "kernels/simt/portable.h"
#include "tests/unit/simt/simt_test_support.h"

namespace tern::simt {
namespace {

using kernels::cuda::load_aligned;
using kernels::cuda::store_aligned;

int g_line = 0;

__global__ void copy_one(const int* in, int* out) {
  out[threadIdx.x] = __ldg(in + threadIdx.x);
}

TEST(SimtDeviceMemory, KernelHandedHostMemoryFailsBeforeItRuns) {
  std::vector<int> host(32, 5);
  DeviceVector<int> device(32, 7);
  const LaunchStatus status =
      launch("copy_one", config_of(1, 32), copy_one, device.data(), host.data());
  EXPECT_EQ(status.kind, LaunchErrorKind::host_pointer) << status.message;
  EXPECT_NE(status.message.find("kernel 'copy_one': argument 1"), std::string::npos)
      << status.message;
  EXPECT_EQ(host[0], 5);  // never ran

  // Null pointers and addresses inside an allocation are device pointers.
  DeviceVector<int> out(40, 0);
  EXPECT_TRUE(launch("copy_one", config_of(1, 32), copy_one, device.data(), out.data() + 8).ok());
  EXPECT_EQ(out[8], 7);
  EXPECT_EQ(launch("copy_one", config_of(1, 32), copy_one, host.data(), out.data()).kind,
            LaunchErrorKind::host_pointer);
}

TEST(SimtDeviceMemory, FreedMemoryIsNoLongerDevicePointer) {
  void* pointer = device_allocate(100);
  ASSERT_NE(pointer, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pointer) % 256, 0u);
  EXPECT_TRUE(is_device_address(static_cast<char*>(pointer) + 99));
  EXPECT_TRUE(is_device_address(static_cast<char*>(pointer) + 100));  // end of the range
  EXPECT_TRUE(device_free(pointer));
  EXPECT_FALSE(is_device_address(pointer));
  EXPECT_FALSE(device_free(pointer));
}

__global__ void load_float4(const float* in, float* out, int offset) {
  const float4 v = load_aligned<float4>(in + offset);
  AT_LINE(g_line, store_aligned(out + offset, make_float4(v.w, v.z, v.y, v.x)));
}

// A large allocation is mapped pages: zeroing a range of it drops whole pages (they read as
// zeros again) and writes the partial pages at its ends, leaving everything outside untouched.
TEST(SimtDeviceMemory, ZeroFillOfALargeAllocationKeepsWhatLiesOutsideIt) {
  const std::size_t bytes = 80u << 20;
  auto* memory = static_cast<unsigned char*>(simt::device_allocate(bytes));
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory[0], 0);  // fresh pages are zeros
  EXPECT_EQ(memory[bytes - 1], 0);
  std::memset(memory, 0xab, bytes);
  const std::size_t from = 1000;
  const std::size_t to = bytes - 777;
  simt::device_fill(memory + from, 0, to - from);
  EXPECT_EQ(memory[from - 1], 0xab);
  EXPECT_EQ(memory[to], 0xab);
  EXPECT_EQ(memory[bytes - 1], 0xab);
  for (std::size_t at = from; at < to; at += 4093) ASSERT_EQ(memory[at], 0) << at;
  EXPECT_EQ(memory[from], 0);
  EXPECT_EQ(memory[to - 1], 0);
  simt::device_fill(memory, 7, 16);  // any other byte is a plain memset
  EXPECT_EQ(memory[15], 7);
  EXPECT_EQ(memory[16], 0xab);
  EXPECT_TRUE(simt::is_device_address(memory + bytes - 1));
  EXPECT_TRUE(simt::device_free(memory));
  EXPECT_FALSE(simt::is_device_address(memory));
}

TEST(SimtDeviceMemory, MisalignedVectorAccessIsAnError) {
  DeviceVector<float> in(8), out(8, 0.0f);
  for (int i = 0; i < 8; ++i) in[static_cast<std::size_t>(i)] = static_cast<float>(i);
  ASSERT_TRUE(launch("load_float4", config_of(1, 1), load_float4, in.data(), out.data(), 4).ok());
  EXPECT_EQ(out[4], 7.0f);
  EXPECT_EQ(out[7], 4.0f);
  // in + 1 is 4-byte aligned only: the load faults (line of the load itself is reported).
  const LaunchStatus status =
      launch("load_float4", config_of(1, 1), load_float4, in.data(), out.data(), 1);
  EXPECT_EQ(status.kind, LaunchErrorKind::misaligned_access) << status.message;
  EXPECT_NE(status.message.find("vector load of 16 bytes"), std::string::npos) << status.message;
  EXPECT_NE(status.message.find("device_test.cpp:" + std::to_string(g_line - 1)), std::string::npos)
      << status.message;
}

__global__ void half_math(const __half* a, const __nv_bfloat16* b, float* out) {
  const unsigned lane = threadIdx.x;
  const __half h = a[lane];
  // A half travels through a shuffle whole.
  const __half neighbour = __shfl_xor_sync(0xffffffffu, h, 1);
  out[4 * lane] = __half2float(neighbour);
  out[4 * lane + 1] = __half2float(h * neighbour + h);
  out[4 * lane + 2] = __bfloat162float(__shfl_down_sync(0xffffffffu, b[lane], 2));
  out[4 * lane + 3] = __half2float(__float2half_rn(__bfloat162float(b[lane])));
}

TEST(SimtDeviceMath, HalfAndBfloat16RoundLikeTheHardware) {
  // Conversions round to nearest even: 1 + 2^-11 is halfway between two halves.
  EXPECT_EQ(__half_as_ushort(__float2half_rn(1.0f + 0x1p-11f)), 0x3c00);
  EXPECT_EQ(__half_as_ushort(__float2half_rn(1.0f + 0x1p-11f + 0x1p-20f)), 0x3c01);
  EXPECT_EQ(__half_as_ushort(__float2half_rn(70000.0f)), 0x7c00);  // overflow to infinity
  EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16_rn(1.0f + 0x1p-8f)), 0x3f80);
  EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16_rn(1.0f + 0x1p-8f + 0x1p-16f)), 0x3f81);
  // Arithmetic rounds the exact result once: 2048 + 1 is not a half, 2048 + 2 is.
  EXPECT_EQ(float(__float2half_rn(2048.0f) + __float2half_rn(1.0f)), 2048.0f);
  EXPECT_EQ(float(__float2half_rn(2048.0f) + __float2half_rn(2.0f)), 2050.0f);

  DeviceVector<__half> a(32);
  DeviceVector<__nv_bfloat16> b(32);
  for (int i = 0; i < 32; ++i) {
    a[static_cast<std::size_t>(i)] = __float2half_rn(0.25f * static_cast<float>(i) - 3.0f);
    b[static_cast<std::size_t>(i)] = __float2bfloat16_rn(100.5f * static_cast<float>(i));
  }
  DeviceVector<float> out(128);
  for (Schedule schedule : kAllSchedules) {
    ASSERT_TRUE(
        launch("half_math", config_of(1, 32, schedule), half_math, a.data(), b.data(), out.data())
            .ok());
    for (unsigned lane = 0; lane < 32; ++lane) {
      const float h = float(a[lane]);
      const float n = float(a[lane ^ 1]);
      EXPECT_EQ(out[4 * lane], n);
      EXPECT_EQ(out[4 * lane + 1], float(__float2half_rn(float(__float2half_rn(h * n)) + h)));
      EXPECT_EQ(out[4 * lane + 2], float(b[lane + 2 < 32 ? lane + 2 : lane]));
      EXPECT_EQ(out[4 * lane + 3], float(__float2half_rn(float(b[lane]))));
    }
  }
}

TEST(SimtDeviceMath, Dp4aSumsFourByteProducts) {
  std::mt19937 random(3);
  for (int i = 0; i < 1000; ++i) {
    const auto a = static_cast<int>(random());
    const auto b = static_cast<int>(random());
    const int c = static_cast<int>(random() % 1000) - 500;
    int expected = c;
    unsigned expected_unsigned = static_cast<unsigned>(c);
    for (int k = 0; k < 4; ++k) {
      const auto ab = static_cast<std::uint32_t>(a) >> (8 * k);
      const auto bb = static_cast<std::uint32_t>(b) >> (8 * k);
      expected += static_cast<std::int8_t>(ab) * static_cast<std::int8_t>(bb);
      expected_unsigned += (ab & 0xffu) * (bb & 0xffu);
    }
    EXPECT_EQ(__dp4a(a, b, c), expected);
    EXPECT_EQ(__dp4a(static_cast<unsigned>(a), static_cast<unsigned>(b), static_cast<unsigned>(c)),
              expected_unsigned);
  }
  EXPECT_EQ(__dp4a(static_cast<int>(0x80808080u), static_cast<int>(0x80808080u), 0), 4 * 16384);
}

TEST(SimtDeviceMath, FastIntrinsicsFollowTheirDocumentedSemantics) {
  // __expf: within 2 + floor(|1.16 x|) ulp of expf (CUDA programming guide, intrinsic functions).
  for (float x = -80.0f; x <= 80.0f; x += 0.37f) {
    const float exact = std::exp(x);
    const float ulp = std::nextafter(exact, INFINITY) - exact;
    EXPECT_LE(std::fabs(__expf(x) - exact), (2.0f + std::floor(std::fabs(1.16f * x))) * ulp) << x;
  }
  EXPECT_EQ(__expf(-100.0f), 0.0f);  // denormal results flush to zero
  // __fdividef: 0 for 2^126 < |y| < 2^128, NaN when x is infinite there.
  EXPECT_EQ(__fdividef(1.0f, 0x1p127f), 0.0f);
  EXPECT_TRUE(std::isnan(__fdividef(INFINITY, 0x1p127f)));
  EXPECT_EQ(__fdividef(6.0f, 3.0f), 2.0f);
  EXPECT_EQ(rsqrtf(4.0f), 0.5f);
  EXPECT_EQ(min(3, -2), -2);
  EXPECT_EQ(max(3u, 7u), 7u);
}

__global__ void fill_dynamic(int* out) {
  TERN_DYNAMIC_SHARED(int, buffer);
  buffer[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = buffer[blockDim.x - 1 - threadIdx.x];
}

TEST(SimtCudaRuntime, CopiesCheckDirectionsAndLaunchErrorsReachCudaGetLastError) {
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 64 * sizeof(int)), cudaSuccess);
  std::vector<int> host(64, 3), back(64, 0);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 256, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(back.data(), host.data(), 256, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(back.data(), device, 256, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);
  EXPECT_EQ(cudaFree(host.data()), cudaErrorInvalidDevicePointer);

  // 64 KiB of dynamic shared memory needs the kernel's opt-in, as on a GPU.
  const std::size_t big = 64 * 1024;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  TERN_LAUNCH(fill_dynamic, dim3(1), dim3(64), big, nullptr, static_cast<int*>(device));
  EXPECT_EQ(last_launch_status().kind, LaunchErrorKind::invalid_config);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // reading it clears it
  ASSERT_EQ(cudaFuncSetAttribute(fill_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(big)),
            cudaSuccess);
  TERN_LAUNCH(fill_dynamic, dim3(1), dim3(64), big, nullptr, static_cast<int*>(device));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << last_launch_status().message;
  EXPECT_EQ(cudaMemcpy(back.data(), device, 256, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back[0], 63);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

}  // namespace
}  // namespace tern::simt
