#include "engine/backend/device_bandwidth.h"

#include <gtest/gtest.h>

#include "engine/backend/backend_factory.h"
#include "engine/backend/cuda/device_copy_bandwidth.h"
#include "engine/backend/cuda/emulated_device_runtime.h"

namespace tern::engine {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

BackendSpec emulated_spec() {
  BackendSpec spec;
  spec.kind = BackendKind::cuda_emulated;
  return spec;
}

TEST(DeviceBandwidth, EmulatedDeviceIsMeasuredAndLabelledAsHostMemory) {
  auto measured = measure_device_bandwidth(emulated_spec(), 8 * kMiB, 2);
  ASSERT_TRUE(measured) << measured.error().message;
  EXPECT_GT(measured->bytes_per_second, 0);
  EXPECT_NE(measured->device.find("cuda-emulated device 0"), std::string::npos) << measured->device;
  EXPECT_NE(measured->device.find("host memory"), std::string::npos) << measured->device;
}

TEST(DeviceBandwidth, MeasuresTheFirstDeviceOfTheSpec) {
  BackendSpec spec = emulated_spec();
  spec.emulated.devices = 2;
  spec.devices = {1};
  auto measured = measure_device_bandwidth(spec, kMiB, 1);
  ASSERT_TRUE(measured) << measured.error().message;
  EXPECT_NE(measured->device.find("cuda-emulated device 1"), std::string::npos) << measured->device;
}

TEST(DeviceBandwidth, AProbeThatDoesNotFitNamesTheBackendAndTheProbe) {
  BackendSpec spec = emulated_spec();
  spec.emulated.memory_bytes = kMiB;
  auto measured = measure_device_bandwidth(spec, kMiB, 1);  // needs 2 MiB
  ASSERT_FALSE(measured);
  EXPECT_NE(measured.error().message.find("backend cuda-emulated: "), std::string::npos)
      << measured.error().message;
  EXPECT_NE(measured.error().message.find("bandwidth probe"), std::string::npos)
      << measured.error().message;
}

TEST(DeviceBandwidth, CpuHasNoDeviceMemory) {
  auto measured = measure_device_bandwidth(BackendSpec{}, kMiB, 1);
  ASSERT_FALSE(measured);
  EXPECT_NE(measured.error().message.find("backend cpu"), std::string::npos)
      << measured.error().message;
}

TEST(DeviceBandwidth, CudaWithoutAUsableGpuIsAnErrorNamingCuda) {
  BackendSpec spec;
  spec.kind = BackendKind::cuda;
  if (check_backend_available(spec).ok()) GTEST_SKIP() << "a CUDA device is usable here";
  auto measured = measure_device_bandwidth(spec, kMiB, 1);
  ASSERT_FALSE(measured);
  EXPECT_EQ(measured.error().message.rfind("backend cuda: ", 0), 0u) << measured.error().message;
}

TEST(DeviceCopyBandwidth, RefusesAnEmptyMeasurement) {
  auto runtime = cuda::make_emulated_device_runtime(EmulatedDeviceOptions{});
  EXPECT_FALSE(cuda::measure_device_copy_bandwidth(*runtime, 0, 1));
  EXPECT_FALSE(cuda::measure_device_copy_bandwidth(*runtime, kMiB, 0));
}

TEST(DeviceCopyBandwidth, FreesItsBuffersAndStream) {
  EmulatedDeviceOptions options;
  options.memory_bytes = 3 * kMiB;  // room for one measurement's two buffers, not two
  auto runtime = cuda::make_emulated_device_runtime(options);
  ASSERT_TRUE(runtime->set_device(0).ok());
  for (int round = 0; round < 3; ++round) {
    auto measured = cuda::measure_device_copy_bandwidth(*runtime, kMiB, 2);
    ASSERT_TRUE(measured) << "round " << round << ": " << measured.error().message;
    EXPECT_GT(*measured, 0);
  }
  auto memory = runtime->memory_info();
  ASSERT_TRUE(memory) << memory.error().message;
  EXPECT_EQ(memory->free_bytes, memory->total_bytes);
}

}  // namespace
}  // namespace tern::engine
