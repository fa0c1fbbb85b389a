#include "engine/backend/cuda/device_copy_bandwidth.h"

#include <chrono>

#include <fmt/format.h>

namespace tern::engine::cuda {
namespace {

// A stream that is destroyed with its scope.
class ScopedStream {
 public:
  ScopedStream(DeviceRuntime& runtime, Stream stream) : runtime_(runtime), stream_(stream) {}
  ~ScopedStream() { runtime_.destroy_stream(stream_); }
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;
  Stream get() const { return stream_; }

 private:
  DeviceRuntime& runtime_;
  Stream stream_;
};

}  // namespace

Expected<double> measure_device_copy_bandwidth(DeviceRuntime& runtime, std::uint64_t bytes,
                                               int repetitions) {
  if (bytes == 0 || repetitions < 1) {
    return Error{
        fmt::format("{}: a bandwidth measurement needs bytes > 0 and repetitions >= 1, "
                    "got {} bytes and {} repetitions",
                    runtime.name(), bytes, repetitions)};
  }
  auto from = DeviceAllocation::create(runtime, bytes, "the bandwidth probe's source");
  if (!from) return from.error();
  auto to = DeviceAllocation::create(runtime, bytes, "the bandwidth probe's destination");
  if (!to) return to.error();
  auto created = runtime.create_stream();
  if (!created) return created.error();
  const ScopedStream stream(runtime, *created);

  // The untimed first copy faults the pages in (host memory on the emulated device) and takes
  // any first-use cost of the copy engine out of the timing.
  if (Status filled = runtime.fill(from->get(), 0x5A, bytes, stream.get()); !filled.ok()) {
    return filled.error();
  }
  if (Status copied = runtime.copy_on_device(to->get(), from->get(), bytes, stream.get());
      !copied.ok()) {
    return copied.error();
  }
  if (Status done = runtime.synchronize(stream.get()); !done.ok()) return done.error();

  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repetitions; ++r) {
    if (Status copied = runtime.copy_on_device(to->get(), from->get(), bytes, stream.get());
        !copied.ok()) {
      return copied.error();
    }
  }
  if (Status done = runtime.synchronize(stream.get()); !done.ok()) return done.error();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!(seconds > 0))
    return Error{fmt::format("{}: the copies took no measurable time", runtime.name())};
  return 2.0 * static_cast<double>(bytes) * repetitions / seconds;
}

}  // namespace tern::engine::cuda
