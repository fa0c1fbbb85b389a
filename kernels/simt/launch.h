#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tern::simt {

// CUDA's dim3 (and uint3, the type of threadIdx): unset components are 1.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr Dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  constexpr unsigned long long count() const { return static_cast<unsigned long long>(x) * y * z; }
};

// The order in which a block's threads run between two synchronisation points. Kernels that are
// correct give the same result under all three; a missing barrier shows in at least one.
// Whatever the schedule, the blocks of a grid run one after another in an order drawn from the
// launch's seed and the kernel's name.
enum class Schedule { forward, reverse, random };

// The seed of this process's emulated schedules: TERN_SIMT_SCHEDULE_SEED when it is set (to
// replay a failure), else drawn from std::random_device once per process. TERN_LAUNCH uses it
// unless a ScopedSchedule names another.
std::uint64_t process_schedule_seed();
inline constexpr const char* kScheduleSeedVariable = "TERN_SIMT_SCHEDULE_SEED";

inline constexpr std::size_t kDefaultSharedLimit = 48 * 1024;
inline constexpr std::size_t kMaxSharedSm80 = 163 * 1024;
inline constexpr std::size_t kMaxSharedSm90 = 227 * 1024;

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  std::size_t dynamic_shared_bytes = 0;
  Schedule schedule = Schedule::forward;
  std::uint64_t seed = 0;  // the blocks' order, and the threads' under Schedule::random
  // Static plus dynamic shared memory per block may not exceed this. Above 48 KiB is the opt-in
  // (cudaFuncAttributeMaxDynamicSharedMemorySize), allowed up to the architecture's maximum.
  std::size_t shared_limit_bytes = kDefaultSharedLimit;
  int sm = 90;                          // 80 or 90
  std::size_t stack_bytes = 64 * 1024;  // per emulated thread
};

enum class LaunchErrorKind {
  none,
  invalid_config,       // grid, block or shared memory sizes CUDA would refuse
  divergent_barrier,    // __syncthreads reached from different call sites
  barrier_not_reached,  // a thread returned while others wait at __syncthreads
  warp_mask,            // a lane named in a warp intrinsic's mask did not arrive, or masks disagree
  invalid_argument,     // e.g. a shuffle width that is not a power of two up to 32
  shared_limit,         // __shared__ allocations over the block's limit
  host_pointer,         // a pointer argument that is not in the emulated device's memory
  misaligned_access,    // a vector load or store from an address not aligned to its size
  shared_race,          // two threads touch the same shared bytes with no barrier between
  uninitialized_shared,  // shared memory read before any thread of the block wrote it
  out_of_bounds,         // a guard band around a device allocation changed (device_memory.h)
  async_copy_pending,    // shared bytes touched, or a thread ended, before its cp.async was waited
                         // for
};

// What a launch returns: ok, or which fault and a message naming the kernel, file and line.
struct LaunchStatus {
  LaunchErrorKind kind = LaunchErrorKind::none;
  std::string message;
  bool ok() const { return kind == LaunchErrorKind::none; }
};

// Runs body once per thread of every block (blocks one after another on the calling thread, a
// block's threads as fibers on it), then checks the device allocations' guard bands: a changed
// band fails the launch with out_of_bounds, naming the allocation and which of
// `pointer_arguments` (the kernel's, by index; null for others) point into it. Never throws.
LaunchStatus run_grid(const char* kernel_name, const LaunchConfig& config,
                      const std::function<void()>& body,
                      std::span<const void* const> pointer_arguments = {});

// While a recorder is installed on an OS thread, TERN_LAUNCH and launch() on that thread record
// the launch, with its arguments as they are now, instead of running it: the emulated device's
// CUDA graph capture. The pointer checks still run at record time, as CUDA validates a launch
// when it is captured.
class LaunchRecorder {
 public:
  virtual ~LaunchRecorder() = default;
  virtual void record(const char* kernel_name, std::function<LaunchStatus()> replay) = 0;
};
LaunchRecorder*& launch_recorder();

// A pointer argument must be null or point into the emulated device's memory (device_memory.h).
LaunchStatus check_pointer_argument(const char* kernel_name, std::size_t index,
                                    const void* pointer);

// Launches `kernel(args...)` as CUDA would launch kernel<<<grid, block, shared>>>(args...).
template <class... Params, class... Args>
LaunchStatus launch(const char* kernel_name, const LaunchConfig& config, void (*kernel)(Params...),
                    Args&&... args) {
  std::tuple<Params...> bound(std::forward<Args>(args)...);
  LaunchStatus status;
  std::array<const void*, sizeof...(Params)> pointers{};
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          using Param = std::tuple_element_t<I, std::tuple<Params...>>;
          if constexpr (std::is_pointer_v<Param>) {
            pointers[I] = std::get<I>(bound);
            if (status.ok()) status = check_pointer_argument(kernel_name, I, std::get<I>(bound));
          }
        }(),
        ...);
  }
  (std::index_sequence_for<Params...>{});
  if (!status.ok()) return status;
  if (LaunchRecorder* recorder = launch_recorder()) {
    recorder->record(kernel_name, [kernel_name, config, kernel, bound, pointers] {
      return run_grid(
          kernel_name, config,
          [&] {
            std::tuple<Params...> arguments = bound;  // each replay runs on the captured values
            std::apply(kernel, arguments);
          },
          pointers);
    });
    return status;
  }
  return run_grid(
      kernel_name, config, [&] { std::apply(kernel, bound); }, pointers);
}

// The schedule and seed that TERN_LAUNCH uses on this OS thread, for the scope of this object.
class ScopedSchedule {
 public:
  ScopedSchedule(Schedule schedule, std::uint64_t seed);
  ~ScopedSchedule();
  ScopedSchedule(const ScopedSchedule&) = delete;
  ScopedSchedule& operator=(const ScopedSchedule&) = delete;

 private:
  Schedule previous_schedule_;
  std::uint64_t previous_seed_;
};

// The config TERN_LAUNCH builds: the current ScopedSchedule's schedule and seed (else forward and
// process_schedule_seed()), and the shared memory limit the kernel opted into (set_shared_limit,
// the emulated cudaFuncSetAttribute).
LaunchConfig default_config(Dim3 grid, Dim3 block, std::size_t dynamic_shared_bytes,
                            const void* kernel = nullptr);
void set_shared_limit(const void* kernel, std::size_t bytes);

// The status of the last TERN_LAUNCH on this OS thread.
LaunchStatus& last_launch_status();
// Stores a TERN_LAUNCH's status: in last_launch_status(), and as the error the next
// cudaGetLastError() returns when it failed.
void record_launch(LaunchStatus status);
// The failure recorded since the last call, then none (what the emulated cudaGetLastError reads).
LaunchErrorKind take_launch_error();

}  // namespace tern::simt
