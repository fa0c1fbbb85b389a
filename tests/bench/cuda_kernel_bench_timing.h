#pragma once

// Times a kernel launcher: groups of back-to-back launches, each group timed as a whole.
//
// On a GPU a group is captured once into a CUDA graph and replayed between two CUDA events, so
// the host's launch cost (several microseconds a launch, more than many of these kernels take)
// drops out, as it does in the CUDA backend's decode graphs. Where capture fails, the launches
// go to the stream directly between the events (timing "stream_events"). On the SIMT emulator,
// where work completes as it is issued, a group is timed by the host's clock.
//
// The launches rotate over the case's instances (copies of its inputs, together larger than the
// device's L2 cache), so that a memory-bound kernel reads device memory, not the cache.

#include <functional>
#include <string>

#include "kernels/cuda/cuda_api.h"
#include "tests/bench/cuda_kernel_bench_record.h"

namespace tern::cuda_bench {

// Launches the case on instance `instance` (0 <= instance < instances) on `stream`.
using Launch = std::function<cudaError_t(int instance, cudaStream_t stream)>;

struct TimingPlan {
  int instances = 1;
  int groups = 0;             // timed groups; 0: as many as target_us allows, 3 to 100
  double target_us = 60'000;  // device time to aim for per measurement
  double group_us = 1'000;    // least device time of one group
  int max_launches_per_group = 512;
  bool use_graphs = true;
};

// Runs one untimed launch (on the emulator only when the groups are not fixed), then the timed
// groups. False with `error` set when a launch, the capture or the stream fails.
bool time_launches(const Launch& launch, const TimingPlan& plan, cudaStream_t stream,
                   Timing& timing, std::string& error);

}  // namespace tern::cuda_bench
