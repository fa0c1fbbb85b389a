#include "kernels/simt/launch.h"

namespace tern::simt {
namespace {

thread_local Schedule t_schedule = Schedule::forward;
thread_local std::uint64_t t_seed = 0;

}  // namespace

ScopedSchedule::ScopedSchedule(Schedule schedule, std::uint64_t seed)
    : previous_schedule_(t_schedule), previous_seed_(t_seed) {
  t_schedule = schedule;
  t_seed = seed;
}

ScopedSchedule::~ScopedSchedule() {
  t_schedule = previous_schedule_;
  t_seed = previous_seed_;
}

LaunchConfig default_config(Dim3 grid, Dim3 block, std::size_t dynamic_shared_bytes) {
  LaunchConfig config;
  config.grid = grid;
  config.block = block;
  config.dynamic_shared_bytes = dynamic_shared_bytes;
  config.schedule = t_schedule;
  config.seed = t_seed;
  return config;
}

LaunchStatus& last_launch_status() {
  thread_local LaunchStatus status;
  return status;
}

}  // namespace tern::simt
