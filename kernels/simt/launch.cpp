#include "kernels/simt/launch.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <utility>

#include "kernels/simt/device_memory.h"

namespace tern::simt {
namespace {

thread_local Schedule t_schedule = Schedule::forward;
thread_local std::uint64_t t_seed = process_schedule_seed();
thread_local LaunchErrorKind t_pending_error = LaunchErrorKind::none;

struct SharedLimits {
  std::mutex mutex;
  std::map<const void*, std::size_t> by_kernel;
};

SharedLimits& shared_limits() {
  static SharedLimits limits;
  return limits;
}

std::uint64_t draw_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

std::uint64_t read_seed() {
  const char* text = std::getenv(kScheduleSeedVariable);
  if (text == nullptr || *text == '\0') return draw_seed();
  char* end = nullptr;
  errno = 0;
  const unsigned long long seed = std::strtoull(text, &end, 0);
  if (errno == 0 && *end == '\0') return seed;
  const std::uint64_t drawn = draw_seed();
  std::fprintf(stderr, "simt: %s=%s is not a number; using the drawn seed %llu\n",
               kScheduleSeedVariable, text, static_cast<unsigned long long>(drawn));
  return drawn;
}

}  // namespace

std::uint64_t process_schedule_seed() {
  static const std::uint64_t seed = read_seed();
  return seed;
}

ScopedSchedule::ScopedSchedule(Schedule schedule, std::uint64_t seed)
    : previous_schedule_(t_schedule), previous_seed_(t_seed) {
  t_schedule = schedule;
  t_seed = seed;
}

ScopedSchedule::~ScopedSchedule() {
  t_schedule = previous_schedule_;
  t_seed = previous_seed_;
}

void set_shared_limit(const void* kernel, std::size_t bytes) {
  SharedLimits& limits = shared_limits();
  const std::lock_guard lock(limits.mutex);
  limits.by_kernel[kernel] = bytes;
}

LaunchConfig default_config(Dim3 grid, Dim3 block, std::size_t dynamic_shared_bytes,
                            const void* kernel) {
  LaunchConfig config;
  if (kernel != nullptr) {
    SharedLimits& limits = shared_limits();
    const std::lock_guard lock(limits.mutex);
    const auto it = limits.by_kernel.find(kernel);
    // The opt-in covers dynamic memory; CUDA's limit for static plus dynamic is the maximum.
    if (it != limits.by_kernel.end())
      config.shared_limit_bytes = std::max(kDefaultSharedLimit, it->second);
  }
  config.grid = grid;
  config.block = block;
  config.dynamic_shared_bytes = dynamic_shared_bytes;
  config.schedule = t_schedule;
  config.seed = t_seed;
  return config;
}

LaunchStatus check_pointer_argument(const char* kernel_name, std::size_t index,
                                    const void* pointer) {
  if (pointer == nullptr || is_device_address(pointer)) return {};
  return {LaunchErrorKind::host_pointer,
          "kernel '" + std::string(kernel_name) + "': argument " + std::to_string(index) +
              " points outside the device's memory (host memory passed to a kernel?)"};
}

LaunchRecorder*& launch_recorder() {
  thread_local LaunchRecorder* recorder = nullptr;
  return recorder;
}

LaunchStatus& last_launch_status() {
  thread_local LaunchStatus status;
  return status;
}

void record_launch(LaunchStatus status) {
  if (!status.ok()) t_pending_error = status.kind;
  last_launch_status() = std::move(status);
}

LaunchErrorKind take_launch_error() {
  return std::exchange(t_pending_error, LaunchErrorKind::none);
}

}  // namespace tern::simt
