#include "engine/backend/cuda/cudart_device_runtime.h"

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tern::engine::cuda {
namespace {

cudaStream_t as_stream(Stream stream) {
  return static_cast<cudaStream_t>(stream.handle);
}
cudaEvent_t as_event(Event event) {
  return static_cast<cudaEvent_t>(event.handle);
}
cudaGraphExec_t as_graph(Graph graph) {
  return static_cast<cudaGraphExec_t>(graph.handle);
}

std::string describe(cudaError_t status) {
  return fmt::format("{} ({})", cudaGetErrorName(status), cudaGetErrorString(status));
}

// `call` failed with `status`. The runtime keeps the last error per thread; clearing it keeps a
// handled failure from being reported again by an unrelated later call (a launcher's
// cudaGetLastError). A sticky error (a faulted context) stays whatever is cleared.
Error failed(std::string_view call, cudaError_t status) {
  cudaGetLastError();
  return Error{fmt::format("cuda: {} failed: {}", call, describe(status))};
}

Status check(cudaError_t status, std::string_view call) {
  if (status == cudaSuccess) return Status::success();
  return failed(call, status);
}

// The first failure of host work (enqueue_host), which runs on a CUDA thread where no caller
// waits for its Status: kept for the runtime's next synchronize.
class HostWorkFailures {
 public:
  void failed(std::string message) {
    spdlog::error("cuda: host work failed: {}", message);
    const std::lock_guard lock(mutex_);
    if (first_.empty()) first_ = std::move(message);
  }
  Status take() {
    const std::lock_guard lock(mutex_);
    if (first_.empty()) return Status::success();
    return Error{fmt::format("cuda: host work failed: {}", std::exchange(first_, {}))};
  }

 private:
  std::mutex mutex_;
  std::string first_;
};

// cudaLaunchHostFunc's argument. Issued outside capture it runs once and frees itself; captured,
// the graph's host node points at it at every replay, so the runtime keeps it.
struct HostWork {
  std::function<Status()> work;
  HostWorkFailures* failures = nullptr;
  bool once = false;
};

void CUDART_CB run_host_work(void* argument) {
  auto* host = static_cast<HostWork*>(argument);
  if (Status status = host->work(); !status.ok()) host->failures->failed(status.message());
  if (host->once) delete host;
}

// The capture of the calling thread (cudaStreamCaptureModeThreadLocal: CUDA refuses the unsafe
// calls of the capturing thread only), the releases held back until it ends, and the host work
// captured into it.
struct ThreadCapture {
  cudaStream_t stream = nullptr;
  bool active = false;
  std::vector<void*> held_device;
  std::vector<void*> held_pinned;
  std::vector<std::unique_ptr<HostWork>> host_work;
};

ThreadCapture& thread_capture() {
  thread_local ThreadCapture capture;
  return capture;
}

void free_device(void* memory) {
  if (const cudaError_t status = cudaFree(memory); status != cudaSuccess) {
    spdlog::warn("{}", failed("cudaFree", status).message);
  }
}

void free_pinned(void* memory) {
  if (const cudaError_t status = cudaFreeHost(memory); status != cudaSuccess) {
    spdlog::warn("{}", failed("cudaFreeHost", status).message);
  }
}

class CudartDeviceRuntime final : public DeviceRuntime {
 public:
  explicit CudartDeviceRuntime(int devices) : devices_(devices) {}

  std::string_view name() const override { return "cuda"; }
  int device_count() const override { return devices_; }

  Status set_device(int device) override {
    if (device < 0 || device >= devices_) {
      return Error{
          fmt::format("cuda: there is no device {}; this machine has {}", device, devices_)};
    }
    return check(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device));
  }

  Expected<DeviceMemoryInfo> memory_info() override {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (const cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
        status != cudaSuccess) {
      return failed("cudaMemGetInfo", status);
    }
    return DeviceMemoryInfo{total_bytes, free_bytes};
  }

  Expected<void*> allocate(std::uint64_t bytes, std::string_view what) override {
    if (Status allowed = outside_capture("cudaMalloc"); !allowed.ok()) return allowed.error();
    void* memory = nullptr;
    const cudaError_t status = cudaMalloc(&memory, bytes);
    if (status == cudaSuccess) return memory;
    if (status != cudaErrorMemoryAllocation) {
      return failed(fmt::format("cudaMalloc of {} bytes for {}", bytes, what), status);
    }
    cudaGetLastError();
    int device = -1;
    cudaGetDevice(&device);
    const Expected<DeviceMemoryInfo> info = memory_info();
    if (!info.ok()) {
      return Error{fmt::format("cuda: out of memory on device {}: {} needs {} bytes ({})", device,
                               what, bytes, describe(status))};
    }
    return Error{fmt::format(
        "cuda: out of memory on device {}: {} needs {} bytes, {} of {} are free (cudaMalloc: {})",
        device, what, bytes, info->free_bytes, info->total_bytes, cudaGetErrorName(status))};
  }

  void release(void* device_memory) override {
    if (device_memory == nullptr) return;
    ThreadCapture& capture = thread_capture();
    if (capture.active) {
      capture.held_device.push_back(device_memory);  // cudaFree would end the capture
      return;
    }
    free_device(device_memory);
  }

  Expected<void*> allocate_pinned(std::uint64_t bytes, std::string_view what) override {
    if (Status allowed = outside_capture("cudaHostAlloc"); !allowed.ok()) return allowed.error();
    void* memory = nullptr;
    const cudaError_t status = cudaHostAlloc(&memory, bytes, cudaHostAllocDefault);
    if (status != cudaSuccess) {
      return failed(fmt::format("cudaHostAlloc of {} pinned bytes for {}", bytes, what), status);
    }
    return memory;
  }

  void release_pinned(void* host_memory) override {
    if (host_memory == nullptr) return;
    ThreadCapture& capture = thread_capture();
    if (capture.active) {
      capture.held_pinned.push_back(host_memory);
      return;
    }
    free_pinned(host_memory);
  }

  Expected<Stream> create_stream() override {
    cudaStream_t stream = nullptr;
    if (const cudaError_t status = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        status != cudaSuccess) {
      return failed("cudaStreamCreateWithFlags", status);
    }
    return Stream{stream};
  }

  void destroy_stream(Stream stream) override {
    if (const cudaError_t status = cudaStreamDestroy(as_stream(stream)); status != cudaSuccess) {
      spdlog::warn("{}", failed("cudaStreamDestroy", status).message);
    }
  }

  Status copy_to_device(void* device, const void* host, std::uint64_t bytes,
                        Stream stream) override {
    return check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, as_stream(stream)),
                 fmt::format("cudaMemcpyAsync of {} bytes to the device", bytes));
  }

  Status copy_to_host(void* host, const void* device, std::uint64_t bytes, Stream stream) override {
    return check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, as_stream(stream)),
                 fmt::format("cudaMemcpyAsync of {} bytes to the host", bytes));
  }

  Status copy_on_device(void* to, const void* from, std::uint64_t bytes, Stream stream) override {
    return check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, as_stream(stream)),
                 fmt::format("cudaMemcpyAsync of {} bytes on the device", bytes));
  }

  Status fill(void* device, int byte, std::uint64_t bytes, Stream stream) override {
    return check(cudaMemsetAsync(device, byte, bytes, as_stream(stream)),
                 fmt::format("cudaMemsetAsync of {} bytes", bytes));
  }

  Status synchronize(Stream stream) override {
    if (Status allowed = outside_capture("cudaStreamSynchronize"); !allowed.ok()) return allowed;
    if (Status synced = check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize");
        !synced.ok()) {
      return synced;
    }
    return host_work_failures_.take();
  }

  Status enqueue_host(std::function<Status()> work, Stream stream) override {
    if (!work) return Error{"cuda: enqueue_host of no work"};
    ThreadCapture& capture = thread_capture();
    auto host = std::make_unique<HostWork>(
        HostWork{std::move(work), &host_work_failures_, /*once=*/!capture.active});
    if (Status status = check(cudaLaunchHostFunc(as_stream(stream), &run_host_work, host.get()),
                              "cudaLaunchHostFunc");
        !status.ok()) {
      return status;
    }
    if (capture.active) {
      capture.host_work.push_back(std::move(host));
    } else {
      host.release();  // run_host_work frees it
    }
    return Status::success();
  }

  Expected<Event> create_event() override {
    cudaEvent_t event = nullptr;
    if (const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
        status != cudaSuccess) {
      return failed("cudaEventCreateWithFlags", status);
    }
    return Event{event};
  }

  Expected<Event> create_timing_event() override {
    cudaEvent_t event = nullptr;
    if (const cudaError_t status = cudaEventCreate(&event); status != cudaSuccess) {
      return failed("cudaEventCreate", status);
    }
    return Event{event};
  }

  void destroy_event(Event event) override {
    if (const cudaError_t status = cudaEventDestroy(as_event(event)); status != cudaSuccess) {
      spdlog::warn("{}", failed("cudaEventDestroy", status).message);
    }
  }

  Status record(Event event, Stream stream) override {
    return check(cudaEventRecord(as_event(event), as_stream(stream)), "cudaEventRecord");
  }

  Status wait(Stream stream, Event event) override {
    return check(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0), "cudaStreamWaitEvent");
  }

  Expected<double> elapsed_seconds(Event from, Event to) override {
    float milliseconds = 0;
    if (const cudaError_t status =
            cudaEventElapsedTime(&milliseconds, as_event(from), as_event(to));
        status != cudaSuccess) {
      return failed("cudaEventElapsedTime", status);
    }
    return milliseconds / 1e3;
  }

  Status begin_capture(Stream stream) override {
    ThreadCapture& capture = thread_capture();
    if (capture.active) {
      return Error{"cuda: cudaStreamBeginCapture on a thread that is capturing already"};
    }
    if (Status status =
            check(cudaStreamBeginCapture(as_stream(stream), cudaStreamCaptureModeThreadLocal),
                  "cudaStreamBeginCapture");
        !status.ok()) {
      return status;
    }
    capture.stream = as_stream(stream);
    capture.active = true;
    return Status::success();
  }

  Expected<Graph> end_capture(Stream stream) override {
    ThreadCapture& capture = thread_capture();
    if (!capture.active || capture.stream != as_stream(stream)) {
      return Error{"cuda: cudaStreamEndCapture on a stream that is not capturing"};
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(as_stream(stream), &graph);
    capture.active = false;
    capture.stream = nullptr;
    release_held(capture);
    std::vector<std::unique_ptr<HostWork>> host_work = std::exchange(capture.host_work, {});
    if (ended != cudaSuccess) return failed("cudaStreamEndCapture", ended);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    // The executable graph is independent of the graph it was made from.
    const cudaError_t destroyed = cudaGraphDestroy(graph);
    if (instantiated != cudaSuccess) return failed("cudaGraphInstantiate", instantiated);
    if (destroyed != cudaSuccess) {
      cudaGraphExecDestroy(exec);
      return failed("cudaGraphDestroy", destroyed);
    }
    if (!host_work.empty()) {
      const std::lock_guard lock(graph_host_work_mutex_);
      for (auto& host : host_work) graph_host_work_.push_back(std::move(host));
    }
    return Graph{exec};
  }

  Status launch_graph(Graph graph, Stream stream) override {
    return check(cudaGraphLaunch(as_graph(graph), as_stream(stream)), "cudaGraphLaunch");
  }

  void destroy_graph(Graph graph) override {
    if (const cudaError_t status = cudaGraphExecDestroy(as_graph(graph)); status != cudaSuccess) {
      spdlog::warn("{}", failed("cudaGraphExecDestroy", status).message);
    }
  }

  const kernels::cuda::DeviceKernels& kernels() const override {
    return kernels::cuda::nvcc_kernels();
  }

 private:
  // CUDA refuses these on a capturing thread and invalidates the capture; refusing them first
  // keeps the capture usable, as the emulated device does.
  static Status outside_capture(std::string_view call) {
    if (!thread_capture().active) return Status::success();
    return Error{fmt::format(
        "cuda: {} during CUDA graph capture (cudaErrorStreamCaptureUnsupported)", call)};
  }

  static void release_held(ThreadCapture& capture) {
    for (void* memory : std::exchange(capture.held_device, {})) free_device(memory);
    for (void* memory : std::exchange(capture.held_pinned, {})) free_pinned(memory);
  }

  int devices_;
  HostWorkFailures host_work_failures_;
  // Host work captured into graphs, kept as long as the runtime: a replay still in flight when its
  // graph is destroyed may run it, and graphs are captured a bounded number of times (warm-up).
  std::mutex graph_host_work_mutex_;
  std::vector<std::unique_ptr<HostWork>> graph_host_work_;
};

}  // namespace

Expected<std::unique_ptr<DeviceRuntime>> make_cuda_device_runtime(int device) {
  int count = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess) {
    cudaGetLastError();
    return Error{fmt::format("cuda: no usable CUDA device: cudaGetDeviceCount failed: {}",
                             describe(status))};
  }
  if (count == 0) return Error{"cuda: no CUDA device: cudaGetDeviceCount found none"};
  if (device < 0 || device >= count) {
    return Error{fmt::format("cuda: there is no device {}; this machine has {}", device, count)};
  }
  if (Status status = check(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device));
      !status.ok()) {
    return status.error();
  }
  return std::unique_ptr<DeviceRuntime>(std::make_unique<CudartDeviceRuntime>(count));
}

}  // namespace tern::engine::cuda
