#include "engine/backend/cuda/emulated_device_runtime.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "kernels/simt/device_memory.h"
#include "kernels/simt/launch.h"

namespace tern::engine::cuda {
namespace {

struct EmulatedGraph {
  std::vector<std::function<Status()>> steps;
};

struct EmulatedStream {
  int device = 0;
};

struct EmulatedEvent {};

// Records what the capturing thread issues; kernel launches arrive through the emulator's
// LaunchRecorder hook, copies and fills from the runtime itself.
class Capture final : public simt::LaunchRecorder {
 public:
  explicit Capture(EmulatedStream* stream) : stream_(stream) {}

  void record(const char* kernel_name, std::function<simt::LaunchStatus()> replay) override {
    graph_->steps.emplace_back([kernel_name, replay = std::move(replay)]() -> Status {
      const simt::LaunchStatus status = replay();
      if (status.ok()) return Status::success();
      return Error{fmt::format("cuda-emulated: graph replay of kernel {} failed: {}", kernel_name,
                               status.message)};
    });
  }
  void record_step(std::function<Status()> step) { graph_->steps.push_back(std::move(step)); }

  EmulatedStream* stream() const { return stream_; }
  std::unique_ptr<EmulatedGraph> finish() { return std::move(graph_); }

 private:
  EmulatedStream* stream_;
  std::unique_ptr<EmulatedGraph> graph_ = std::make_unique<EmulatedGraph>();
};

class EmulatedDeviceRuntime final : public DeviceRuntime {
 public:
  explicit EmulatedDeviceRuntime(const EmulatedDeviceOptions& options)
      : options_(options), used_(static_cast<std::size_t>(options.devices), 0) {}

  ~EmulatedDeviceRuntime() override {
    thread_devices().erase(this);
    if (capture_) simt::launch_recorder() = nullptr;
    for (const auto& [memory, allocation] : allocations_) simt::device_free(memory);
    for (void* memory : pinned_) std::free(memory);
  }

  std::string_view name() const override { return "cuda-emulated"; }
  int device_count() const override { return options_.devices; }

  Status set_device(int device) override {
    if (device < 0 || device >= options_.devices) {
      return Error{fmt::format("cuda-emulated: there is no device {}; the emulated machine has {}",
                               device, options_.devices)};
    }
    current_device() = device;
    return Status::success();
  }

  Expected<DeviceMemoryInfo> memory_info() override {
    const int device = current_device();
    return DeviceMemoryInfo{options_.memory_bytes, options_.memory_bytes - used_[index(device)]};
  }

  Expected<void*> allocate(std::uint64_t bytes, std::string_view what) override {
    if (Status allowed = outside_capture("cudaMalloc"); !allowed.ok()) return allowed.error();
    const int device = current_device();
    const std::uint64_t free_bytes = options_.memory_bytes - used_[index(device)];
    if (bytes > free_bytes) {
      return Error{fmt::format(
          "cuda-emulated: out of memory on device {}: {} needs {} bytes, {} of {} are free", device,
          what, bytes, free_bytes, options_.memory_bytes)};
    }
    void* memory = simt::device_allocate(bytes);
    if (memory == nullptr) {
      return Error{
          fmt::format("cuda-emulated: the host could not hold {} bytes for {}", bytes, what)};
    }
    allocations_[memory] = {device, bytes};
    used_[index(device)] += bytes;
    return memory;
  }

  void release(void* device_memory) override {
    const auto it = allocations_.find(device_memory);
    if (it == allocations_.end()) return;
    used_[index(it->second.device)] -= it->second.bytes;
    allocations_.erase(it);
    simt::device_free(device_memory);
  }

  Expected<void*> allocate_pinned(std::uint64_t bytes, std::string_view what) override {
    if (Status allowed = outside_capture("cudaHostAlloc"); !allowed.ok()) return allowed.error();
    void* memory = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (memory == nullptr) {
      return Error{
          fmt::format("cuda-emulated: no host memory for {} pinned bytes ({})", bytes, what)};
    }
    pinned_.insert(memory);
    return memory;
  }

  void release_pinned(void* host_memory) override {
    if (pinned_.erase(host_memory) != 0) std::free(host_memory);
  }

  Expected<Stream> create_stream() override {
    streams_.push_back(std::make_unique<EmulatedStream>(EmulatedStream{current_device()}));
    return Stream{streams_.back().get()};
  }

  void destroy_stream(Stream stream) override {
    std::erase_if(streams_, [&](const auto& s) { return s.get() == stream.handle; });
  }

  Status copy_to_device(void* device, const void* host, std::uint64_t bytes,
                        Stream stream) override {
    return issue(stream, [=]() -> Status {
      if (!simt::is_device_address(device) ||
          !simt::is_device_address(static_cast<char*>(device) + bytes))
        return Error{"cuda-emulated: copy to device memory that is not an allocation"};
      std::memcpy(device, host, bytes);
      return Status::success();
    });
  }

  Status copy_to_host(void* host, const void* device, std::uint64_t bytes, Stream stream) override {
    return issue(stream, [=]() -> Status {
      if (!simt::is_device_address(device))
        return Error{"cuda-emulated: copy from device memory that is not an allocation"};
      std::memcpy(host, device, bytes);
      return Status::success();
    });
  }

  Status copy_on_device(void* to, const void* from, std::uint64_t bytes, Stream stream) override {
    return issue(stream, [=]() -> Status {
      if (!simt::is_device_address(to) || !simt::is_device_address(from))
        return Error{"cuda-emulated: device-to-device copy outside the device's memory"};
      std::memmove(to, from, bytes);
      return Status::success();
    });
  }

  Status fill(void* device, int byte, std::uint64_t bytes, Stream stream) override {
    return issue(stream, [=]() -> Status {
      if (!simt::is_device_address(device))
        return Error{"cuda-emulated: fill of memory that is not an allocation"};
      simt::device_fill(device, byte, bytes);
      return Status::success();
    });
  }

  Status synchronize(Stream) override { return outside_capture("cudaStreamSynchronize"); }

  Expected<Event> create_event() override {
    events_.push_back(std::make_unique<EmulatedEvent>());
    return Event{events_.back().get()};
  }
  void destroy_event(Event event) override {
    std::erase_if(events_, [&](const auto& e) { return e.get() == event.handle; });
  }
  // Work completes when it is issued, so an event is always reached.
  Status record(Event, Stream) override { return Status::success(); }
  Status wait(Stream, Event) override { return Status::success(); }

  Status begin_capture(Stream stream) override {
    if (capture_) {
      return Error{"cuda-emulated: cudaStreamBeginCapture while another capture is in progress"};
    }
    if (simt::launch_recorder() != nullptr) {
      return Error{"cuda-emulated: cudaStreamBeginCapture on a thread that is capturing already"};
    }
    capture_ = std::make_unique<Capture>(static_cast<EmulatedStream*>(stream.handle));
    simt::launch_recorder() = capture_.get();
    return Status::success();
  }

  Expected<Graph> end_capture(Stream stream) override {
    if (!capture_ || capture_->stream() != stream.handle) {
      return Error{"cuda-emulated: cudaStreamEndCapture on a stream that is not capturing"};
    }
    simt::launch_recorder() = nullptr;
    graphs_.push_back(capture_->finish());
    capture_.reset();
    return Graph{graphs_.back().get()};
  }

  Status launch_graph(Graph graph, Stream stream) override {
    auto* recorded = static_cast<EmulatedGraph*>(graph.handle);
    return issue(stream, [recorded]() -> Status {
      for (const std::function<Status()>& step : recorded->steps) {
        if (Status status = step(); !status.ok()) return status;
      }
      return Status::success();
    });
  }

  void destroy_graph(Graph graph) override {
    std::erase_if(graphs_, [&](const auto& g) { return g.get() == graph.handle; });
  }

  const kernels::cuda::DeviceKernels& kernels() const override {
    return kernels::cuda::emulated_kernels();
  }

 private:
  struct Allocation {
    int device;
    std::uint64_t bytes;
  };

  // The device each OS thread works on, as cudaSetDevice's, but per runtime: each emulated
  // runtime is a machine of its own, and a new one starts on device 0.
  static std::map<const EmulatedDeviceRuntime*, int>& thread_devices() {
    thread_local std::map<const EmulatedDeviceRuntime*, int> devices;
    return devices;
  }
  int& current_device() const { return thread_devices()[this]; }
  static std::size_t index(int device) { return static_cast<std::size_t>(device); }

  // What CUDA refuses while a stream captures.
  Status outside_capture(std::string_view call) const {
    if (!capture_) return Status::success();
    return Error{fmt::format(
        "cuda-emulated: {} during CUDA graph capture (cudaErrorStreamCaptureUnsupported)", call)};
  }

  // Runs work now, or records it into the graph being captured.
  Status issue(Stream, std::function<Status()> work) {
    if (capture_) {
      capture_->record_step(std::move(work));
      return Status::success();
    }
    return work();
  }

  EmulatedDeviceOptions options_;
  std::vector<std::uint64_t> used_;
  std::map<void*, Allocation> allocations_;
  std::set<void*> pinned_;
  std::vector<std::unique_ptr<EmulatedStream>> streams_;
  std::vector<std::unique_ptr<EmulatedEvent>> events_;
  std::vector<std::unique_ptr<EmulatedGraph>> graphs_;
  std::unique_ptr<Capture> capture_;
};

}  // namespace

std::unique_ptr<DeviceRuntime> make_emulated_device_runtime(const EmulatedDeviceOptions& options) {
  return std::make_unique<EmulatedDeviceRuntime>(options);
}

}  // namespace tern::engine::cuda
