#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
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
enum class Schedule { forward, reverse, random };

inline constexpr std::size_t kDefaultSharedLimit = 48 * 1024;
inline constexpr std::size_t kMaxSharedSm80 = 163 * 1024;
inline constexpr std::size_t kMaxSharedSm90 = 227 * 1024;

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  std::size_t dynamic_shared_bytes = 0;
  Schedule schedule = Schedule::forward;
  std::uint64_t seed = 0;  // for Schedule::random
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
};

// What a launch returns: ok, or which fault and a message naming the kernel, file and line.
struct LaunchStatus {
  LaunchErrorKind kind = LaunchErrorKind::none;
  std::string message;
  bool ok() const { return kind == LaunchErrorKind::none; }
};

// Runs body once per thread of every block (blocks one after another on the calling thread, a
// block's threads as fibers on it). Never throws.
LaunchStatus run_grid(const char* kernel_name, const LaunchConfig& config,
                      const std::function<void()>& body);

// Launches `kernel(args...)` as CUDA would launch kernel<<<grid, block, shared>>>(args...).
template <class... Params, class... Args>
LaunchStatus launch(const char* kernel_name, const LaunchConfig& config, void (*kernel)(Params...),
                    Args&&... args) {
  std::tuple<Params...> bound(std::forward<Args>(args)...);
  return run_grid(kernel_name, config, [&] { std::apply(kernel, bound); });
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

// The config TERN_LAUNCH builds: the current ScopedSchedule's schedule and seed.
LaunchConfig default_config(Dim3 grid, Dim3 block, std::size_t dynamic_shared_bytes);

// The status of the last TERN_LAUNCH on this OS thread, like cudaGetLastError.
LaunchStatus& last_launch_status();

}  // namespace tern::simt
