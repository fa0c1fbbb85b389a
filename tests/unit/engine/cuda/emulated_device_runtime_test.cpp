// The emulated device: memory by device with out-of-memory errors, copies, the kernels through
// the neutral table, and CUDA graph capture with what CUDA refuses during it.

#include "engine/backend/cuda/emulated_device_runtime.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/cpu/rms_norm.h"
#include "kernels/simt/asan.h"
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
  // The emulator's account of the fault follows CUDA's error.
  EXPECT_EQ(host.message(),
            "cuda-emulated: kernel rms_norm failed: cudaErrorIllegalAddress (kernel "
            "'rms_norm_kernel<kRowThreads>': argument 0 points outside the device's memory (host "
            "memory passed to a kernel?))");
}

// A kernel that writes past a runtime allocation fails its step naming the allocation by what
// it was allocated for; copies and fills outside one allocation are refused before they run.
TEST(EmulatedDeviceRuntime, AccessesOutsideAnAllocationAreErrorsNamingIt) {
  auto runtime = make_emulated_device_runtime(machine(1, 64 << 20));
  const Stream stream = *runtime->create_stream();
  const int rows = 3, cols = 40;
  auto d_x = must_allocate(*runtime, rows * cols * 4, "x");
  auto d_weight = must_allocate(*runtime, cols * 4, "weight");
  auto d_y = must_allocate(*runtime, (rows - 1) * cols * 4, "y, a row short");
  ASSERT_TRUE(runtime->fill(d_x.get(), 0, rows * cols * 4, stream).ok());
  ASSERT_TRUE(runtime->fill(d_weight.get(), 0, cols * 4, stream).ok());

  std::vector<float> host(rows * cols);
  EXPECT_EQ(runtime->copy_to_host(host.data(), d_y.get(), rows * cols * 4, stream).message(),
            "cuda-emulated: copy of 480 bytes from device memory that is not within one "
            "allocation");
  EXPECT_EQ(runtime->copy_to_device(d_y.get(), host.data(), rows * cols * 4, stream).message(),
            "cuda-emulated: copy of 480 bytes to device memory that is not within one allocation");
  EXPECT_EQ(runtime->copy_on_device(d_y.get(), d_x.get(), rows * cols * 4, stream).message(),
            "cuda-emulated: device-to-device copy of 480 bytes outside one allocation");
  EXPECT_EQ(runtime->fill(d_y.get(), 0, rows * cols * 4, stream).message(),
            "cuda-emulated: fill of 480 bytes of memory that is not within one allocation");

  const auto& kernels = runtime->kernels();
  auto norm_three_rows = [&] {
    return runtime->launched(kernels.rms_norm(d_x.as<float>(), d_weight.as<float>(),
                                              d_y.as<float>(), rows, cols, 1e-5f, stream.handle),
                             "rms_norm");
  };
#if defined(TERN_SIMT_ASAN)
  // The band is poisoned: ASan stops the write itself.
  EXPECT_DEATH(static_cast<void>(norm_three_rows()), "use-after-poison");
#else
  const Status past = norm_three_rows();
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.message().rfind("cuda-emulated: kernel rms_norm failed: cudaErrorIllegalAddress "
                                 "(kernel 'rms_norm_kernel<kRowThreads>': out-of-bounds write "
                                 "past the end of device allocation 'y, a row short' of 320 bytes "
                                 "at 0x",
                                 0),
            0u)
      << past.message();
  EXPECT_NE(past.message().find(": bytes 0 to 159 past its end changed; argument 2 points into it"),
            std::string::npos)
      << past.message();
#endif
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

TEST(EmulatedDeviceRuntime, HostWorkRunsInStreamOrderWithCopiesAndFailsWithItsMessage) {
  auto runtime = make_emulated_device_runtime(machine(1, 64 << 20));
  const Stream stream = *runtime->create_stream();
  auto memory = must_allocate(*runtime, 4, "memory");
  const float* device = memory.as<float>();
  std::vector<float> seen;
  const auto look = [&]() -> Status {
    seen.push_back(*device);  // emulated device memory is host memory
    return Status::success();
  };
  const float value = 2.5f;
  ASSERT_TRUE(runtime->copy_to_device(memory.get(), &value, 4, stream).ok());
  ASSERT_TRUE(runtime->enqueue_host(look, stream).ok());
  ASSERT_TRUE(runtime->fill(memory.get(), 0, 4, stream).ok());
  ASSERT_TRUE(runtime->enqueue_host(look, stream).ok());
  EXPECT_EQ(seen, (std::vector<float>{2.5f, 0.0f}));

  const Status failed =
      runtime->enqueue_host([]() -> Status { return Error{"rank 2 is gone"}; }, stream);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.message(), "rank 2 is gone");
}

TEST(EmulatedDeviceRuntime, CapturedHostWorkRunsAtEachReplayAndItsFailureFailsTheReplay) {
  auto runtime = make_emulated_device_runtime(machine(1, 64 << 20));
  const Stream stream = *runtime->create_stream();
  auto memory = must_allocate(*runtime, 4, "memory");
  const float* device = memory.as<float>();
  float staged = 0.0f;
  std::vector<float> seen;
  ASSERT_TRUE(runtime->begin_capture(stream).ok());
  ASSERT_TRUE(runtime->copy_to_device(memory.get(), &staged, 4, stream).ok());
  ASSERT_TRUE(runtime
                  ->enqueue_host(
                      [&]() -> Status {
                        seen.push_back(*device);
                        if (seen.size() == 3) return Error{"the third replay fails"};
                        return Status::success();
                      },
                      stream)
                  .ok());
  const Expected<Graph> graph = runtime->end_capture(stream);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  EXPECT_TRUE(seen.empty());  // recorded, not run

  for (const float value : {1.0f, 2.0f}) {
    staged = value;
    ASSERT_TRUE(runtime->launch_graph(*graph, stream).ok());
  }
  staged = 3.0f;
  const Status third = runtime->launch_graph(*graph, stream);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.message(), "the third replay fails");
  EXPECT_EQ(seen, (std::vector<float>{1.0f, 2.0f, 3.0f}));
  runtime->destroy_graph(*graph);
}

// Tensor parallelism drives one device per thread: each thread allocates, launches, captures and
// replays on its own device at the same time as the others, the four captures open at once
// (run under TSan by `make tsan`).
TEST(EmulatedDeviceRuntime, FourThreadsDriveFourDevicesAtOnce) {
  constexpr int kDevices = 4;
  constexpr std::uint64_t kMemory = 16 << 20;
  auto runtime = make_emulated_device_runtime(machine(kDevices, kMemory));
  std::barrier in_step(kDevices);
  std::vector<std::string> failures(kDevices);
  const auto drive = [&](int device) {
    // A thread that stops early leaves the barrier, so the others never wait for it.
    struct LeaveOnExit {
      std::barrier<>& barrier;
      ~LeaveOnExit() { barrier.arrive_and_drop(); }
    } leave{in_step};
    std::string& failure = failures[static_cast<std::size_t>(device)];
    const auto fail = [&](std::string_view what, const std::string& message) {
      if (failure.empty()) failure = std::string(what) + ": " + message;
    };
    if (Status set = runtime->set_device(device); !set.ok())
      return fail("set_device", set.message());
    for (int round = 0; round < 5; ++round) {
      in_step.arrive_and_wait();
      const int n = 64 + device;
      const Expected<Stream> stream = runtime->create_stream();
      if (!stream.ok()) return fail("create_stream", stream.error().message);
      Expected<DeviceAllocation> into = DeviceAllocation::create(*runtime, n * 4, "into");
      Expected<DeviceAllocation> from = DeviceAllocation::create(*runtime, n * 4, "from");
      if (!into.ok() || !from.ok()) return fail("allocate", "failed");
      const Expected<DeviceMemoryInfo> info = runtime->memory_info();
      if (!info.ok() || info->free_bytes != kMemory - 2 * static_cast<std::uint64_t>(n) * 4)
        return fail("memory_info", "another device's allocations counted on this one");
      std::vector<float> zeros(static_cast<std::size_t>(n), 0.0f);
      std::vector<float> ones(static_cast<std::size_t>(n), static_cast<float>(device + 1));
      if (!runtime->copy_to_device(into->get(), zeros.data(), n * 4, *stream).ok())
        return fail("copy", "failed");
      // A launch now, then a graph of a copy and a launch, replayed three times.
      if (!runtime->copy_to_device(from->get(), ones.data(), n * 4, *stream).ok())
        return fail("copy", "failed");
      const auto add = [&]() {
        return runtime->launched(
            runtime->kernels().add(into->as<float>(), from->as<float>(), n, stream->handle), "add");
      };
      if (Status added = add(); !added.ok()) return fail("add", added.message());
      if (Status begun = runtime->begin_capture(*stream); !begun.ok())
        return fail("begin_capture", begun.message());
      in_step.arrive_and_wait();  // every thread is capturing now
      if (!runtime->copy_to_device(from->get(), ones.data(), n * 4, *stream).ok())
        return fail("copy", "failed during capture");
      if (Status added = add(); !added.ok()) return fail("add during capture", added.message());
      const Expected<Graph> graph = runtime->end_capture(*stream);
      if (!graph.ok()) return fail("end_capture", graph.error().message);
      for (int replay = 0; replay < 3; ++replay) {
        if (Status launched = runtime->launch_graph(*graph, *stream); !launched.ok())
          return fail("launch_graph", launched.message());
      }
      std::vector<float> result(static_cast<std::size_t>(n));
      if (!runtime->copy_to_host(result.data(), into->get(), n * 4, *stream).ok() ||
          !runtime->synchronize(*stream).ok())
        return fail("download", "failed");
      for (const float value : result) {
        if (value != 4.0f * static_cast<float>(device + 1))
          return fail("result",
                      "device " + std::to_string(device) + " got " + std::to_string(value));
      }
      runtime->destroy_graph(*graph);
      runtime->destroy_stream(*stream);
    }
  };
  std::vector<std::thread> threads;
  for (int device = 0; device < kDevices; ++device) threads.emplace_back(drive, device);
  for (std::thread& thread : threads) thread.join();
  for (int device = 0; device < kDevices; ++device) {
    EXPECT_EQ(failures[static_cast<std::size_t>(device)], "") << "device " << device;
    ASSERT_TRUE(runtime->set_device(device).ok());
    EXPECT_EQ(runtime->memory_info()->free_bytes, kMemory);
  }
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
