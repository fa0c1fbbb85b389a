#pragma once

// What the CUDA backend asks of a device: memory, pinned host buffers, streams, events, graph
// capture and replay, and the kernels. Two implementations: the CUDA runtime on a GPU
// (cudart_device_runtime.cpp, only in a build with CUDA) and the emulated device
// (emulated_device_runtime.h), on which the whole backend runs in CI. The backend's host code is
// compiled once, against this interface.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/expected.h"
#include "kernels/cuda/device_kernels.h"

namespace tern::engine::cuda {

// Handles a runtime hands out and takes back; their meaning is the runtime's.
struct Stream {
  void* handle = nullptr;
};
struct Event {
  void* handle = nullptr;
};
struct Graph {
  void* handle = nullptr;
};

struct DeviceMemoryInfo {
  std::uint64_t total_bytes = 0;
  std::uint64_t free_bytes = 0;
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  // "cuda" or "cuda-emulated", for messages.
  virtual std::string_view name() const = 0;
  virtual int device_count() const = 0;
  // Later calls from this OS thread work on `device`.
  virtual Status set_device(int device) = 0;
  virtual Expected<DeviceMemoryInfo> memory_info() = 0;

  // Device memory of the current device; an error says what it was for (`what`), the size asked
  // and the memory free.
  virtual Expected<void*> allocate(std::uint64_t bytes, std::string_view what) = 0;
  virtual void release(void* device_memory) = 0;
  // Page-locked host memory, for copies that overlap with compute.
  virtual Expected<void*> allocate_pinned(std::uint64_t bytes, std::string_view what) = 0;
  virtual void release_pinned(void* host_memory) = 0;

  virtual Expected<Stream> create_stream() = 0;
  virtual void destroy_stream(Stream stream) = 0;
  // Asynchronous on `stream`, in issue order with its kernels.
  virtual Status copy_to_device(void* device, const void* host, std::uint64_t bytes,
                                Stream stream) = 0;
  virtual Status copy_to_host(void* host, const void* device, std::uint64_t bytes,
                              Stream stream) = 0;
  virtual Status copy_on_device(void* to, const void* from, std::uint64_t bytes, Stream stream) = 0;
  virtual Status fill(void* device, int byte, std::uint64_t bytes, Stream stream) = 0;
  // Waits on the host until everything issued on `stream` is done.
  virtual Status synchronize(Stream stream) = 0;

  // Runs `work` on the host in `stream` order: after what was issued on `stream` before it,
  // before what is issued after. During capture it becomes a node of the graph, run at each
  // replay (`work` is kept with the graph until destroy_graph).
  // - emulated: runs on the issuing (or replaying) thread; a failure is this call's (or
  //   launch_graph's) error, with work's message.
  // - cudart (cudaLaunchHostFunc): runs later on a CUDA thread, so its Status cannot be this
  //   call's; the first failure is logged and returned by the runtime's next synchronize (of any
  //   stream). `work` must not call CUDA (a host function that does deadlocks or fails).
  virtual Status enqueue_host(std::function<Status()> work, Stream stream) = 0;

  virtual Expected<Event> create_event() = 0;
  // An event that also notes when it is reached, for elapsed_seconds (op timing: Backend::
  // time_ops); create_event's do not, which keeps recording them cheap on a GPU.
  virtual Expected<Event> create_timing_event() = 0;
  virtual void destroy_event(Event event) = 0;
  virtual Status record(Event event, Stream stream) = 0;
  // Later work on `stream` waits for `event`.
  virtual Status wait(Stream stream, Event event) = 0;
  // Seconds from timing event `from` to timing event `to`, both recorded and reached.
  virtual Expected<double> elapsed_seconds(Event from, Event to) = 0;

  // Between begin_capture and end_capture, work issued on `stream` is recorded into a graph
  // instead of run; launch_graph replays it with the arguments it was captured with.
  virtual Status begin_capture(Stream stream) = 0;
  virtual Expected<Graph> end_capture(Stream stream) = 0;
  virtual Status launch_graph(Graph graph, Stream stream) = 0;
  virtual void destroy_graph(Graph graph) = 0;

  // The kernels of this device; their `stream` argument is a Stream's handle.
  virtual const kernels::cuda::DeviceKernels& kernels() const = 0;

  // A kernel launcher's status as a Status naming the kernel (and, on the emulated device, the
  // emulator's account of the fault).
  virtual Status launched(int status, std::string_view kernel) const;
};

// A device allocation that frees itself.
class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  DeviceAllocation(DeviceRuntime* runtime, void* memory, std::uint64_t bytes)
      : runtime_(runtime), memory_(memory), bytes_(bytes) {}
  ~DeviceAllocation();
  DeviceAllocation(DeviceAllocation&& other) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  static Expected<DeviceAllocation> create(DeviceRuntime& runtime, std::uint64_t bytes,
                                           std::string_view what);

  void* get() const { return memory_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(memory_);
  }
  std::uint64_t bytes() const { return bytes_; }

 private:
  DeviceRuntime* runtime_ = nullptr;
  void* memory_ = nullptr;
  std::uint64_t bytes_ = 0;
};

}  // namespace tern::engine::cuda
