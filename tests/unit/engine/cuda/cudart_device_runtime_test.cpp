// The DeviceRuntime over the CUDA runtime. Without a device (or in a build without CUDA) making
// it is an error naming the reason; with one, the behaviours the emulated device's tests check:
// memory with out-of-memory sizes, copies, events, a kernel through the table, graph capture and
// replay with frozen arguments, and what capture refuses. The GPU tests skip where there is none.

#include "engine/backend/cuda/cudart_device_runtime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kernels/cpu/rms_norm.h"
#include "tests/unit/engine/cuda/device_runtime_test_support.h"

namespace tern::engine::cuda {
namespace {

// A runtime on device 0, or the reason there is none (the test then skips with it).
#define TERN_CUDA_RUNTIME_OR_SKIP(runtime)                                               \
  Expected<std::unique_ptr<DeviceRuntime>> made_##runtime = make_cuda_device_runtime(0); \
  if (!made_##runtime.ok()) GTEST_SKIP() << made_##runtime.error().message;              \
  DeviceRuntime& runtime = **made_##runtime

// Pinned host memory that frees itself: captured copies read host memory at replay, and CUDA
// records copies from page-locked memory into a graph as plain memcpy nodes.
class Pinned {
 public:
  Pinned(DeviceRuntime& runtime, std::uint64_t bytes) : runtime_(runtime) {
    Expected<void*> memory = runtime.allocate_pinned(bytes, "the test's staging");
    EXPECT_TRUE(memory.ok()) << memory.error().message;
    if (memory.ok()) memory_ = *memory;
  }
  ~Pinned() { runtime_.release_pinned(memory_); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  float* floats() const { return static_cast<float*>(memory_); }

 private:
  DeviceRuntime& runtime_;
  void* memory_ = nullptr;
};

TEST(CudartDeviceRuntime, WithoutADeviceMakingItIsAnErrorNamingTheCudaReason) {
  Expected<std::unique_ptr<DeviceRuntime>> runtime = make_cuda_device_runtime(0);
  if (runtime.ok()) GTEST_SKIP() << "this machine has a CUDA device";
  const std::string& message = runtime.error().message;
#if defined(TERN_WITH_CUDA)
  // No driver: cudaErrorInsufficientDriver; a driver but no GPU: cudaErrorNoDevice.
  EXPECT_EQ(message.rfind("cuda: no usable CUDA device: cudaGetDeviceCount failed: cudaError", 0),
            0u)
      << message;
#else
  EXPECT_NE(message.find("no CUDA in this build"), std::string::npos) << message;
#endif
  // Asking again still answers, and never aborts.
  EXPECT_FALSE(make_cuda_device_runtime(0).ok());
}

TEST(CudartDeviceRuntime, ADeviceThatIsNotThereIsAnError) {
  EXPECT_FALSE(make_cuda_device_runtime(-1).ok());
  EXPECT_FALSE(make_cuda_device_runtime(1 << 20).ok());
}

TEST(CudartDeviceRuntime, AllocationsTakeDeviceMemoryAndOneOverItFailsWithTheSizes) {
  TERN_CUDA_RUNTIME_OR_SKIP(runtime);
  EXPECT_EQ(runtime.name(), "cuda");
  ASSERT_GE(runtime.device_count(), 1);
  const Expected<DeviceMemoryInfo> before = runtime.memory_info();
  ASSERT_TRUE(before.ok()) << before.error().message;
  ASSERT_GT(before->total_bytes, before->free_bytes);

  const std::uint64_t size = 256ull << 20;
  {
    DeviceAllocation weights = must_allocate(runtime, size, "the weights");
    ASSERT_NE(weights.get(), nullptr);
    // Other work on the GPU moves free memory too, so only the lower bound is certain.
    EXPECT_LE(runtime.memory_info()->free_bytes + size, before->free_bytes);
  }

  const std::uint64_t too_much = before->total_bytes + (1ull << 30);
  const Expected<void*> refused = runtime.allocate(too_much, "the KV cache");
  ASSERT_FALSE(refused.ok());
  const std::string& message = refused.error().message;
  EXPECT_EQ(message.rfind(fmt::format("cuda: out of memory on device 0: the KV cache needs {} "
                                      "bytes, ",
                                      too_much),
                          0),
            0u)
      << message;
  EXPECT_NE(message.find(fmt::format(" of {} are free", before->total_bytes)), std::string::npos)
      << message;

  // The failure is not sticky: the device still allocates.
  EXPECT_TRUE(DeviceAllocation::create(runtime, 1 << 20, "scratch").ok());
  EXPECT_FALSE(runtime.set_device(runtime.device_count()).ok());
  EXPECT_TRUE(runtime.set_device(0).ok());
}

TEST(CudartDeviceRuntime, CopiesFillsAndEventsKeepTheirOrderAcrossStreams) {
  TERN_CUDA_RUNTIME_OR_SKIP(runtime);
  const Stream first = *runtime.create_stream();
  const Stream second = *runtime.create_stream();
  const Event filled = *runtime.create_event();
  const int n = 1000;
  auto a = must_allocate(runtime, n * 4, "a");
  auto b = must_allocate(runtime, n * 4, "b");
  std::vector<float> values(n);
  for (int i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.5f;

  ASSERT_TRUE(runtime.copy_to_device(a.get(), values.data(), n * 4, first).ok());
  ASSERT_TRUE(runtime.fill(a.as<char>() + 400, 0, 400, first).ok());  // floats 100..199
  ASSERT_TRUE(runtime.record(filled, first).ok());
  ASSERT_TRUE(runtime.wait(second, filled).ok());
  ASSERT_TRUE(runtime.copy_on_device(b.get(), a.get(), n * 4, second).ok());
  const std::vector<float> copied = download<float>(runtime, b, second);
  for (int i = 0; i < n; ++i) {
    const float expected = i >= 100 && i < 200 ? 0.0f : static_cast<float>(i) * 0.5f;
    ASSERT_EQ(copied[static_cast<std::size_t>(i)], expected) << i;
  }
  runtime.destroy_event(filled);
  runtime.destroy_stream(first);
  runtime.destroy_stream(second);
}

TEST(CudartDeviceRuntime, KernelsRunThroughTheTable) {
  TERN_CUDA_RUNTIME_OR_SKIP(runtime);
  const Stream stream = *runtime.create_stream();
  const int rows = 3, cols = 40;
  std::mt19937 random(5);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> x(rows * cols), weight(cols);
  for (float& v : x) v = value(random);
  for (float& v : weight) v = value(random);
  auto d_x = must_allocate(runtime, x.size() * 4, "x");
  auto d_weight = must_allocate(runtime, weight.size() * 4, "weight");
  auto d_y = must_allocate(runtime, x.size() * 4, "y");
  ASSERT_TRUE(runtime.copy_to_device(d_x.get(), x.data(), x.size() * 4, stream).ok());
  ASSERT_TRUE(runtime.copy_to_device(d_weight.get(), weight.data(), cols * 4, stream).ok());
  const auto& kernels = runtime.kernels();
#if defined(TERN_WITH_CUDA)  // only a build with CUDA has nvcc's kernels, or reaches here
  EXPECT_EQ(&kernels, &kernels::cuda::nvcc_kernels());
#endif
  const Status launched =
      runtime.launched(kernels.rms_norm(d_x.as<float>(), d_weight.as<float>(), d_y.as<float>(),
                                        rows, cols, 1e-5f, stream.handle),
                       "rms_norm");
  ASSERT_TRUE(launched.ok()) << launched.message();
  std::vector<float> expected(x.size());
  kernels::rms_norm_scalar(x.data(), weight.data(), expected.data(), rows, cols, 1e-5f);
  const std::vector<float> y = download<float>(runtime, d_y, stream);
  // |y| <= 2 * sqrt(40): float rounding of a 40-term reduction in another order, and nvcc's
  // rsqrtf, stay well inside 1e-4.
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-4f) << i;
  runtime.destroy_stream(stream);
}

TEST(CudartDeviceRuntime, AGraphReplaysItsLaunchesWithTheArgumentsFrozenAtCapture) {
  TERN_CUDA_RUNTIME_OR_SKIP(runtime);
  const Stream stream = *runtime.create_stream();
  const int n = 100;
  auto into = must_allocate(runtime, n * 4, "into");
  auto from = must_allocate(runtime, n * 4, "from");
  Pinned ones(runtime, n * 4);
  for (int i = 0; i < n; ++i) ones.floats()[i] = 1.0f;
  ASSERT_TRUE(runtime.fill(into.get(), 0, n * 4, stream).ok());
  ASSERT_TRUE(runtime.synchronize(stream).ok());

  // Captured: copy `ones` in, then into += from over the first `count` elements.
  long long count = 10;
  ASSERT_TRUE(runtime.begin_capture(stream).ok());
  ASSERT_TRUE(runtime.copy_to_device(from.get(), ones.floats(), n * 4, stream).ok());
  const Status launched = runtime.launched(
      runtime.kernels().add(into.as<float>(), from.as<float>(), count, stream.handle), "add");
  ASSERT_TRUE(launched.ok()) << launched.message();
  const Expected<Graph> graph = runtime.end_capture(stream);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  // Nothing ran during capture.
  EXPECT_EQ(download<float>(runtime, into, stream)[0], 0.0f);

  count = 50;  // a host value changed after capture does not reach the graph
  for (int i = 0; i < n; ++i) ones.floats()[i] = 2.0f;  // the memory a captured copy reads does
  ASSERT_TRUE(runtime.launch_graph(*graph, stream).ok());
  ASSERT_TRUE(runtime.launch_graph(*graph, stream).ok());
  const std::vector<float> result = download<float>(runtime, into, stream);
  EXPECT_EQ(result[0], 4.0f);
  EXPECT_EQ(result[9], 4.0f);
  EXPECT_EQ(result[10], 0.0f);
  runtime.destroy_graph(*graph);
  runtime.destroy_stream(stream);
}

TEST(CudartDeviceRuntime, CaptureRefusesAllocationAndHostSynchronisationNamingTheCall) {
  TERN_CUDA_RUNTIME_OR_SKIP(runtime);
  const Stream stream = *runtime.create_stream();
  void* released_during_capture = *runtime.allocate(1024, "released during capture");
  auto filled = must_allocate(runtime, 1024, "filled");
  ASSERT_TRUE(runtime.fill(filled.get(), 0, 1024, stream).ok());
  ASSERT_TRUE(runtime.begin_capture(stream).ok());
  ASSERT_TRUE(runtime.fill(filled.get(), 7, 1024, stream).ok());
  const auto allocation = runtime.allocate(1024, "scratch");
  ASSERT_FALSE(allocation.ok());
  EXPECT_EQ(allocation.error().message,
            "cuda: cudaMalloc during CUDA graph capture (cudaErrorStreamCaptureUnsupported)");
  const Status sync = runtime.synchronize(stream);
  ASSERT_FALSE(sync.ok());
  EXPECT_NE(sync.message().find("cudaStreamSynchronize during CUDA graph capture"),
            std::string::npos);
  EXPECT_FALSE(runtime.allocate_pinned(64, "staging").ok());
  EXPECT_FALSE(runtime.begin_capture(stream).ok());
  runtime.release(released_during_capture);  // held back: cudaFree would end the capture
  // The refusals left the capture valid.
  const Expected<Graph> graph = runtime.end_capture(stream);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  EXPECT_FALSE(runtime.end_capture(stream).ok());
  EXPECT_TRUE(runtime.launch_graph(*graph, stream).ok());
  for (const char byte : download<char>(runtime, filled, stream)) ASSERT_EQ(byte, 7);
  runtime.destroy_graph(*graph);
  auto after = runtime.allocate(1024, "scratch");  // and allowed again after
  ASSERT_TRUE(after.ok()) << after.error().message;
  runtime.release(*after);
  runtime.destroy_stream(stream);
}

// Host work runs after the copy issued before it; its failure comes back from synchronize.
TEST(CudartDeviceRuntime, HostWorkRunsInStreamOrderAndItsFailureComesBackFromSynchronize) {
  TERN_CUDA_RUNTIME_OR_SKIP(runtime);
  const Stream stream = *runtime.create_stream();
  Pinned staged(runtime, 4);
  auto memory = must_allocate(runtime, 4, "memory");
  staged.floats()[0] = 0.0f;
  const float value = 2.5f;
  std::vector<float> seen;
  ASSERT_TRUE(runtime.copy_to_device(memory.get(), &value, 4, stream).ok());
  ASSERT_TRUE(runtime.copy_to_host(staged.floats(), memory.get(), 4, stream).ok());
  ASSERT_TRUE(runtime
                  .enqueue_host(
                      [&]() -> Status {
                        seen.push_back(staged.floats()[0]);
                        return Status::success();
                      },
                      stream)
                  .ok());
  ASSERT_TRUE(runtime.synchronize(stream).ok());
  EXPECT_EQ(seen, std::vector<float>{2.5f});

  ASSERT_TRUE(
      runtime.enqueue_host([]() -> Status { return Error{"rank 2 is gone"}; }, stream).ok());
  const Status synced = runtime.synchronize(stream);
  ASSERT_FALSE(synced.ok());
  EXPECT_EQ(synced.message(), "cuda: host work failed: rank 2 is gone");
  EXPECT_TRUE(runtime.synchronize(stream).ok());  // reported once
  runtime.destroy_stream(stream);
}

TEST(CudartDeviceRuntime, CapturedHostWorkRunsAtEachReplay) {
  TERN_CUDA_RUNTIME_OR_SKIP(runtime);
  const Stream stream = *runtime.create_stream();
  int runs = 0;
  ASSERT_TRUE(runtime.begin_capture(stream).ok());
  ASSERT_TRUE(runtime
                  .enqueue_host(
                      [&]() -> Status {
                        ++runs;
                        return Status::success();
                      },
                      stream)
                  .ok());
  const Expected<Graph> graph = runtime.end_capture(stream);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  EXPECT_EQ(runs, 0);
  for (int replay = 0; replay < 3; ++replay) ASSERT_TRUE(runtime.launch_graph(*graph, stream).ok());
  ASSERT_TRUE(runtime.synchronize(stream).ok());
  EXPECT_EQ(runs, 3);
  runtime.destroy_graph(*graph);
  runtime.destroy_stream(stream);
}

}  // namespace
}  // namespace tern::engine::cuda
