#include "engine/backend/cuda/emulated_device_runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
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

// A timing event notes the host's clock when recorded: work completes when it is issued, so that
// is when the work before it finished.
struct EmulatedEvent {
  bool timing = false;
  std::optional<std::chrono::steady_clock::time_point> reached;
};

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

// What one OS thread holds in one runtime, as CUDA keeps per thread: the current device and the
// capture in progress.
struct ThreadState {
  int device = 0;
  std::unique_ptr<Capture> capture;
};

// Safe to use from several threads at once (tensor parallelism drives one device per thread):
// the current device and the capture are the calling thread's; the tables of memory, streams,
// events and graphs are under one mutex, which is never held while work (a kernel, a copy, host
// work, a graph's steps) runs.
class EmulatedDeviceRuntime final : public DeviceRuntime {
 public:
  explicit EmulatedDeviceRuntime(const EmulatedDeviceOptions& options)
      : options_(options), used_(static_cast<std::size_t>(options.devices), 0) {}

  // Only the destroying thread's state is dropped here; other threads' entries are keyed by this
  // runtime's serial, which no later runtime reuses.
  ~EmulatedDeviceRuntime() override {
    const auto state = thread_states().find(serial_);
    if (state != thread_states().end()) {
      if (state->second.capture) simt::launch_recorder() = nullptr;
      thread_states().erase(state);
    }
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
    thread_state().device = device;
    return Status::success();
  }

  Expected<DeviceMemoryInfo> memory_info() override {
    const int device = current_device();
    const std::lock_guard lock(mutex_);
    return DeviceMemoryInfo{options_.memory_bytes, options_.memory_bytes - used_[index(device)]};
  }

  Expected<void*> allocate(std::uint64_t bytes, std::string_view what) override {
    if (Status allowed = outside_capture("cudaMalloc"); !allowed.ok()) return allowed.error();
    const int device = current_device();
    const std::lock_guard lock(mutex_);
    const std::uint64_t free_bytes = options_.memory_bytes - used_[index(device)];
    if (bytes > free_bytes) {
      return Error{fmt::format(
          "cuda-emulated: out of memory on device {}: {} needs {} bytes, {} of {} are free", device,
          what, bytes, free_bytes, options_.memory_bytes)};
    }
    void* memory = simt::device_allocate(bytes, what);
    if (memory == nullptr) {
      return Error{
          fmt::format("cuda-emulated: the host could not hold {} bytes for {}", bytes, what)};
    }
    allocations_[memory] = {device, bytes};
    used_[index(device)] += bytes;
    return memory;
  }

  void release(void* device_memory) override {
    const std::lock_guard lock(mutex_);
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
    const std::lock_guard lock(mutex_);
    pinned_.insert(memory);
    return memory;
  }

  void release_pinned(void* host_memory) override {
    {
      const std::lock_guard lock(mutex_);
      if (pinned_.erase(host_memory) == 0) return;
    }
    std::free(host_memory);
  }

  Expected<Stream> create_stream() override {
    auto stream = std::make_unique<EmulatedStream>(EmulatedStream{current_device()});
    const Stream handle{stream.get()};
    const std::lock_guard lock(mutex_);
    streams_.push_back(std::move(stream));
    return handle;
  }

  void destroy_stream(Stream stream) override {
    const std::lock_guard lock(mutex_);
    std::erase_if(streams_, [&](const auto& s) { return s.get() == stream.handle; });
  }

  Status copy_to_device(void* device, const void* host, std::uint64_t bytes,
                        Stream stream) override {
    return issue(stream, [=]() -> Status {
      if (!simt::is_device_range(device, bytes))
        return Error{fmt::format(
            "cuda-emulated: copy of {} bytes to device memory that is not within one allocation",
            bytes)};
      std::memcpy(device, host, bytes);
      return Status::success();
    });
  }

  Status copy_to_host(void* host, const void* device, std::uint64_t bytes, Stream stream) override {
    return issue(stream, [=]() -> Status {
      if (!simt::is_device_range(device, bytes))
        return Error{fmt::format(
            "cuda-emulated: copy of {} bytes from device memory that is not within one allocation",
            bytes)};
      std::memcpy(host, device, bytes);
      return Status::success();
    });
  }

  Status copy_on_device(void* to, const void* from, std::uint64_t bytes, Stream stream) override {
    return issue(stream, [=]() -> Status {
      if (!simt::is_device_range(to, bytes) || !simt::is_device_range(from, bytes))
        return Error{fmt::format(
            "cuda-emulated: device-to-device copy of {} bytes outside one allocation", bytes)};
      std::memmove(to, from, bytes);
      return Status::success();
    });
  }

  Status fill(void* device, int byte, std::uint64_t bytes, Stream stream) override {
    return issue(stream, [=]() -> Status {
      if (!simt::is_device_range(device, bytes))
        return Error{fmt::format(
            "cuda-emulated: fill of {} bytes of memory that is not within one allocation", bytes)};
      simt::device_fill(device, byte, bytes);
      return Status::success();
    });
  }

  Status synchronize(Stream) override { return outside_capture("cudaStreamSynchronize"); }

  // Streams run at issue time, so host work runs now, or at each replay of the graph it is
  // captured into.
  Status enqueue_host(std::function<Status()> work, Stream stream) override {
    if (!work) return Error{"cuda-emulated: enqueue_host of no work"};
    return issue(stream, std::move(work));
  }

  Expected<Event> create_event() override { return make_event(false); }
  Expected<Event> create_timing_event() override { return make_event(true); }
  void destroy_event(Event event) override {
    const std::lock_guard lock(mutex_);
    std::erase_if(events_, [&](const auto& e) { return e.get() == event.handle; });
  }
  // Work completes when it is issued, so an event is always reached.
  Status record(Event event, Stream) override {
    auto* emulated = static_cast<EmulatedEvent*>(event.handle);
    if (emulated != nullptr && emulated->timing)
      emulated->reached = std::chrono::steady_clock::now();
    return Status::success();
  }
  Status wait(Stream, Event) override { return Status::success(); }
  Expected<double> elapsed_seconds(Event from, Event to) override {
    const auto* a = static_cast<const EmulatedEvent*>(from.handle);
    const auto* b = static_cast<const EmulatedEvent*>(to.handle);
    if (a == nullptr || b == nullptr || !a->timing || !b->timing || !a->reached || !b->reached) {
      return Error{"elapsed_seconds: both events must be timing events, recorded"};
    }
    return std::chrono::duration<double>(*b->reached - *a->reached).count();
  }

  Status begin_capture(Stream stream) override {
    ThreadState& state = thread_state();
    if (state.capture) {
      return Error{"cuda-emulated: cudaStreamBeginCapture while another capture is in progress"};
    }
    if (simt::launch_recorder() != nullptr) {
      return Error{"cuda-emulated: cudaStreamBeginCapture on a thread that is capturing already"};
    }
    state.capture = std::make_unique<Capture>(static_cast<EmulatedStream*>(stream.handle));
    simt::launch_recorder() = state.capture.get();
    return Status::success();
  }

  Expected<Graph> end_capture(Stream stream) override {
    ThreadState& state = thread_state();
    if (!state.capture || state.capture->stream() != stream.handle) {
      return Error{"cuda-emulated: cudaStreamEndCapture on a stream that is not capturing"};
    }
    simt::launch_recorder() = nullptr;
    std::unique_ptr<EmulatedGraph> graph = state.capture->finish();
    state.capture.reset();
    const Graph handle{graph.get()};
    const std::lock_guard lock(mutex_);
    graphs_.push_back(std::move(graph));
    return handle;
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
    std::unique_ptr<EmulatedGraph> destroyed;  // its steps' captures are freed outside the lock
    const std::lock_guard lock(mutex_);
    const auto it = std::find_if(graphs_.begin(), graphs_.end(),
                                 [&](const auto& g) { return g.get() == graph.handle; });
    if (it == graphs_.end()) return;
    destroyed = std::move(*it);
    graphs_.erase(it);
  }

  const kernels::cuda::DeviceKernels& kernels() const override {
    return kernels::cuda::emulated_kernels();
  }

  // The launch ran on this thread, so its fault is this thread's last launch status; taken, so
  // that a later launcher's own refusal is not told with it.
  Status launched(int status, std::string_view kernel) const override {
    Status result = DeviceRuntime::launched(status, kernel);
    if (result.ok()) return result;
    const simt::LaunchStatus launch = std::exchange(simt::last_launch_status(), {});
    if (launch.ok()) return result;
    return Error{fmt::format("{} ({})", result.message(), launch.message)};
  }

 private:
  Expected<Event> make_event(bool timing) {
    auto event = std::make_unique<EmulatedEvent>();
    event->timing = timing;
    const Event handle{event.get()};
    const std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
    return handle;
  }

  struct Allocation {
    int device;
    std::uint64_t bytes;
  };

  // Each OS thread's device (as cudaSetDevice's) and capture, per runtime: each emulated runtime
  // is a machine of its own, and a new one starts on device 0 on every thread.
  static std::map<std::uint64_t, ThreadState>& thread_states() {
    thread_local std::map<std::uint64_t, ThreadState> states;
    return states;
  }
  ThreadState& thread_state() const { return thread_states()[serial_]; }
  int current_device() const { return thread_state().device; }
  static std::size_t index(int device) { return static_cast<std::size_t>(device); }

  // What CUDA refuses while a stream captures.
  Status outside_capture(std::string_view call) const {
    if (!thread_state().capture) return Status::success();
    return Error{fmt::format(
        "cuda-emulated: {} during CUDA graph capture (cudaErrorStreamCaptureUnsupported)", call)};
  }

  // Runs work now, or records it into the graph being captured.
  Status issue(Stream, std::function<Status()> work) {
    if (Capture* capture = thread_state().capture.get()) {
      capture->record_step(std::move(work));
      return Status::success();
    }
    return work();
  }

  static std::uint64_t next_serial() {
    static std::atomic<std::uint64_t> serial{0};
    return ++serial;
  }

  const std::uint64_t serial_ = next_serial();
  EmulatedDeviceOptions options_;
  std::mutex mutex_;  // guards the members below it
  std::vector<std::uint64_t> used_;
  std::map<void*, Allocation> allocations_;
  std::set<void*> pinned_;
  std::vector<std::unique_ptr<EmulatedStream>> streams_;
  std::vector<std::unique_ptr<EmulatedEvent>> events_;
  std::vector<std::unique_ptr<EmulatedGraph>> graphs_;
};

}  // namespace

std::unique_ptr<DeviceRuntime> make_emulated_device_runtime(const EmulatedDeviceOptions& options) {
  return std::make_unique<EmulatedDeviceRuntime>(options);
}

}  // namespace tern::engine::cuda
