// The emulated device: memory by device with out-of-memory errors, copies, the kernels through
// the neutral table, and CUDA graph capture with what CUDA refuses during it.

#include "engine/backend/cuda/emulated_device_runtime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "kernels/cpu/rms_norm.h"
#include "tests/unit/engine/cuda/device_runtime_test_support.h"

namespace tern::engine::cuda {
namespace {

EmulatedDeviceOptions machine(int devices, std::uint64_t memory_bytes) {
  EmulatedDeviceOptions options;
  options.devices = devices;
  options.memory_bytes = memory_bytes;
  return options;
}

TEST(EmulatedDeviceRuntime, EachDeviceHasItsMemoryAndAnAllocationOverItFailsWithTheSizes) {
  auto runtime = make_emulated_device_runtime(machine(2, 1 << 20));
  EXPECT_EQ(runtime->device_count(), 2);
  auto first = DeviceAllocation::create(*runtime, 700 << 10, "the weights");
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(runtime->memory_info()->free_bytes, (1u << 20) - (700u << 10));

  const auto second = DeviceAllocation::create(*runtime, 400 << 10, "the KV cache");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().message,
            "cuda-emulated: out of memory on device 0: the KV cache needs 409600 bytes, 331776 of "
            "1048576 are free");

  // Device 1 has its own memory; freeing gives device 0's back.
  ASSERT_TRUE(runtime->set_device(1).ok());
  EXPECT_TRUE(DeviceAllocation::create(*runtime, 400 << 10, "the KV cache").ok());
  ASSERT_TRUE(runtime->set_device(0).ok());
  *first = DeviceAllocation();
  EXPECT_EQ(runtime->memory_info()->free_bytes, 1u << 20);
  EXPECT_FALSE(runtime->set_device(2).ok());
}

// Each runtime is a machine of its own: another one moving to its device 1 on this thread, even
// one that is gone, leaves a new runtime on its device 0.
TEST(EmulatedDeviceRuntime, ANewRuntimeStartsOnDeviceZero) {
  for (int round = 0; round < 3; ++round) {
    auto moved = make_emulated_device_runtime(machine(2, 1 << 20));
    ASSERT_TRUE(moved->set_device(1).ok());
  }
  auto other = make_emulated_device_runtime(machine(2, 1 << 20));
  ASSERT_TRUE(other->set_device(1).ok());
  const auto other_device_1 = DeviceAllocation::create(*other, 1 << 20, "all of device 1");
  ASSERT_TRUE(other_device_1.ok());
  auto fresh = make_emulated_device_runtime(machine(2, 1 << 20));
  EXPECT_EQ(fresh->memory_info()->free_bytes, 1u << 20);
  const auto fresh_device_0 = DeviceAllocation::create(*fresh, 1 << 20, "all of device 0");
  ASSERT_TRUE(fresh_device_0.ok());
  EXPECT_EQ(fresh->memory_info()->free_bytes, 0u);
  ASSERT_TRUE(fresh->set_device(1).ok());
  EXPECT_EQ(fresh->memory_info()->free_bytes, 1u << 20);
}

TEST(EmulatedDeviceRuntime, KernelsRunThroughTheTableOnDeviceMemoryOnly) {
  auto runtime = make_emulated_device_runtime(machine(1, 64 << 20));
  const Stream stream = *runtime->create_stream();
  const int rows = 3, cols = 40;
  std::mt19937 random(5);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> x(rows * cols), weight(cols);
  for (float& v : x) v = value(random);
  for (float& v : weight) v = value(random);
  auto d_x = must_allocate(*runtime, x.size() * 4, "x");
  auto d_weight = must_allocate(*runtime, weight.size() * 4, "weight");
  auto d_y = must_allocate(*runtime, x.size() * 4, "y");
  ASSERT_TRUE(runtime->copy_to_device(d_x.get(), x.data(), x.size() * 4, stream).ok());
  ASSERT_TRUE(runtime->copy_to_device(d_weight.get(), weight.data(), cols * 4, stream).ok());
  const auto& kernels = runtime->kernels();
  ASSERT_TRUE(runtime
                  ->launched(kernels.rms_norm(d_x.as<float>(), d_weight.as<float>(),
                                              d_y.as<float>(), rows, cols, 1e-5f, stream.handle),
                             "rms_norm")
                  .ok());
  std::vector<float> expected(x.size());
  kernels::rms_norm_scalar(x.data(), weight.data(), expected.data(), rows, cols, 1e-5f);
  const std::vector<float> y = download<float>(*runtime, d_y, stream);
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 2e-5f);

  // Host memory handed to a kernel is refused at launch, as it would fault on a GPU.
  const Status host =
      runtime->launched(kernels.rms_norm(x.data(), d_weight.as<float>(), d_y.as<float>(), rows,
                                         cols, 1e-5f, stream.handle),
                        "rms_norm");
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.message(), "cuda-emulated: kernel rms_norm failed: cudaErrorIllegalAddress");
}

TEST(EmulatedDeviceRuntime, AGraphReplaysItsLaunchesWithTheArgumentsFrozenAtCapture) {
  auto runtime = make_emulated_device_runtime(machine(1, 64 << 20));
  const Stream stream = *runtime->create_stream();
  const int n = 100;
  auto into = must_allocate(*runtime, n * 4, "into");
  auto from = must_allocate(*runtime, n * 4, "from");
  std::vector<float> ones(n, 1.0f), staged(n, 0.0f);
  ASSERT_TRUE(runtime->copy_to_device(into.get(), staged.data(), n * 4, stream).ok());

  // Captured: copy `staged` in, then into += from over the first `count` elements.
  long long count = 10;
  ASSERT_TRUE(runtime->begin_capture(stream).ok());
  ASSERT_TRUE(runtime->copy_to_device(from.get(), ones.data(), n * 4, stream).ok());
  ASSERT_TRUE(runtime
                  ->launched(runtime->kernels().add(into.as<float>(), from.as<float>(), count,
                                                    stream.handle),
                             "add")
                  .ok());
  const Expected<Graph> graph = runtime->end_capture(stream);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  // Nothing ran during capture.
  EXPECT_EQ(download<float>(*runtime, into, stream)[0], 0.0f);

  count = 50;            // a host value changed after capture does not reach the graph
  ones.assign(n, 2.0f);  // but the host memory a captured copy reads is read at replay
  ASSERT_TRUE(runtime->launch_graph(*graph, stream).ok());
  ASSERT_TRUE(runtime->launch_graph(*graph, stream).ok());
  const std::vector<float> result = download<float>(*runtime, into, stream);
  EXPECT_EQ(result[0], 4.0f);
  EXPECT_EQ(result[9], 4.0f);
  EXPECT_EQ(result[10], 0.0f);
  runtime->destroy_graph(*graph);
}

TEST(EmulatedDeviceRuntime, CaptureRefusesAllocationAndHostSynchronisationNamingTheCall) {
  auto runtime = make_emulated_device_runtime(machine(1, 64 << 20));
  const Stream stream = *runtime->create_stream();
  ASSERT_TRUE(runtime->begin_capture(stream).ok());
  const auto allocation = runtime->allocate(1024, "scratch");
  ASSERT_FALSE(allocation.ok());
  EXPECT_EQ(allocation.error().message,
            "cuda-emulated: cudaMalloc during CUDA graph capture "
            "(cudaErrorStreamCaptureUnsupported)");
  const Status sync = runtime->synchronize(stream);
  ASSERT_FALSE(sync.ok());
  EXPECT_NE(sync.message().find("cudaStreamSynchronize during CUDA graph capture"),
            std::string::npos);
  EXPECT_FALSE(runtime->allocate_pinned(64, "staging").ok());
  EXPECT_FALSE(runtime->begin_capture(stream).ok());
  ASSERT_TRUE(runtime->end_capture(stream).ok());
  EXPECT_FALSE(runtime->end_capture(stream).ok());
  EXPECT_TRUE(runtime->allocate(1024, "scratch").ok());  // and allowed again after
}

#if defined(TERN_WITH_CUDA)
// nvcc's kernels and the emulator's live side by side in one binary, each with its own API.
TEST(EmulatedDeviceRuntime, NvccAndEmulatedKernelsShareOneBinary) {
  EXPECT_NE(&kernels::cuda::nvcc_kernels(), &kernels::cuda::emulated_kernels());
  EXPECT_STREQ(kernels::cuda::nvcc_kernels().error_name(0), "cudaSuccess");
  EXPECT_STREQ(kernels::cuda::emulated_kernels().error_name(0), "cudaSuccess");
  EXPECT_NE(kernels::cuda::nvcc_kernels().rms_norm, kernels::cuda::emulated_kernels().rms_norm);
}
#endif

}  // namespace
}  // namespace tern::engine::cuda
