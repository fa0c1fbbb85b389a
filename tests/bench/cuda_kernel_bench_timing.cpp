#include "tests/bench/cuda_kernel_bench_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "tests/bench/cuda_kernel_bench_device.h"

namespace tern::cuda_bench {
namespace {

// Groups as the plan asks, or enough for target_us at `group_us` each (3 to 100).
int groups_for(const TimingPlan& plan, double group_us) {
  if (plan.groups > 0) return plan.groups;
  const double wanted = plan.target_us / std::max(group_us, 1e-3);
  return static_cast<int>(std::clamp(std::ceil(wanted), 3.0, 100.0));
}

void summarize(const std::vector<double>& group_us, int launches_per_group, Timing& timing) {
  double sum = 0;
  for (const double us : group_us) sum += us;
  timing.launches_per_group = launches_per_group;
  timing.groups = static_cast<int>(group_us.size());
  timing.mean_us = sum / static_cast<double>(group_us.size()) / launches_per_group;
  timing.min_us = *std::min_element(group_us.begin(), group_us.end()) / launches_per_group;
}

bool launch_checked(const Launch& launch, int instance, cudaStream_t stream, std::string& error) {
  const cudaError_t status = launch(instance, stream);
  if (status == cudaSuccess) return true;
  error = "launch failed: " + describe_error(status);
  return false;
}

#if defined(TERN_SIMT_EMULATED)

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool run_group(const Launch& launch, int count, int instances, cudaStream_t stream,
               double& elapsed_us, std::string& error) {
  const double start = now_us();
  for (int k = 0; k < count; ++k) {
    if (!launch_checked(launch, k % instances, stream, error)) return false;
  }
  elapsed_us = now_us() - start;
  return true;
}

#else

bool check(cudaError_t status, const char* what, std::string& error) {
  if (status == cudaSuccess) return true;
  error = std::string(what) + ": " + describe_error(status);
  cudaGetLastError();
  return false;
}

// CUDA events destroyed with their scope.
class Events {
 public:
  explicit Events(std::size_t count) : events_(count, nullptr) {
    for (cudaEvent_t& event : events_) {
      if (cudaEventCreate(&event) != cudaSuccess) event = nullptr;
    }
  }
  ~Events() {
    for (cudaEvent_t event : events_) {
      if (event != nullptr) cudaEventDestroy(event);
    }
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  bool ok() const {
    return std::none_of(events_.begin(), events_.end(), [](cudaEvent_t e) { return e == nullptr; });
  }
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// A captured group of launches, destroyed with its scope; empty until captured.
class CapturedGroup {
 public:
  CapturedGroup() = default;
  ~CapturedGroup() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  }
  CapturedGroup(const CapturedGroup&) = delete;
  CapturedGroup& operator=(const CapturedGroup&) = delete;

  // Captures `count` launches; ok() stays false where the capture fails (the stream stays usable
  // and the launches go to it directly).
  void capture(const Launch& launch, int count, int instances, cudaStream_t stream) {
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    bool launched = true;
    for (int k = 0; k < count && launched; ++k) {
      launched = launch(k % instances, stream) == cudaSuccess;
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (launched && ended == cudaSuccess && graph != nullptr &&
        cudaGraphInstantiate(&exec_, graph, 0) != cudaSuccess) {
      exec_ = nullptr;
    }
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
  }
  bool ok() const { return exec_ != nullptr; }
  cudaError_t replay(cudaStream_t stream) const { return cudaGraphLaunch(exec_, stream); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

double elapsed_us(cudaEvent_t start, cudaEvent_t end) {
  float ms = 0;
  cudaEventElapsedTime(&ms, start, end);
  return 1000.0 * ms;
}

#endif

}  // namespace

bool time_launches(const Launch& launch, const TimingPlan& plan, cudaStream_t stream,
                   Timing& timing, std::string& error) {
  const int instances = std::max(plan.instances, 1);
  timing.instances = instances;
#if defined(TERN_SIMT_EMULATED)
  // A first launch estimates the groups the target allows; with the groups fixed (--tiny, --reps)
  // it is left out, since the emulator is slow and has no first-use costs to hide.
  double first_us = 0;
  if (plan.groups == 0 && !run_group(launch, 1, 1, stream, first_us, error)) return false;
  const int per_group = instances;
  const int groups = groups_for(plan, first_us * per_group);
  std::vector<double> group_us(static_cast<std::size_t>(groups));
  for (double& us : group_us) {
    if (!run_group(launch, per_group, instances, stream, us, error)) return false;
  }
  summarize(group_us, per_group, timing);
  timing.method = "emulator_wall_clock";
  return true;
#else
  // The first launch alone, so that its errors name it; then one pass over the instances on the
  // stream for an estimate of a launch's time (the host's launch cost included).
  if (!launch_checked(launch, 0, stream, error)) return false;
  if (!check(cudaStreamSynchronize(stream), "the first launch", error)) return false;
  Events estimate(2);
  if (!estimate.ok()) return check(cudaErrorMemoryAllocation, "cudaEventCreate", error);
  if (!check(cudaEventRecord(estimate[0], stream), "cudaEventRecord", error)) return false;
  for (int i = 0; i < instances; ++i) {
    if (!launch_checked(launch, i, stream, error)) return false;
  }
  if (!check(cudaEventRecord(estimate[1], stream), "cudaEventRecord", error)) return false;
  if (!check(cudaStreamSynchronize(stream), "the estimate's launches", error)) return false;
  const double launch_us = std::max(elapsed_us(estimate[0], estimate[1]) / instances, 0.1);

  const int wanted = static_cast<int>(std::ceil(plan.group_us / launch_us));
  const int per_group =
      std::max(instances, std::min(std::max(wanted, 1), plan.max_launches_per_group));
  const int groups = groups_for(plan, launch_us * per_group);

  CapturedGroup graph;
  if (plan.use_graphs) graph.capture(launch, per_group, instances, stream);
  auto run_group = [&]() -> bool {
    if (graph.ok()) return check(graph.replay(stream), "cudaGraphLaunch", error);
    for (int k = 0; k < per_group; ++k) {
      if (!launch_checked(launch, k % instances, stream, error)) return false;
    }
    return true;
  };
  if (!run_group()) return false;  // untimed: the graph's first replay uploads it
  Events events(static_cast<std::size_t>(groups) + 1);
  if (!events.ok()) return check(cudaErrorMemoryAllocation, "cudaEventCreate", error);
  if (!check(cudaEventRecord(events[0], stream), "cudaEventRecord", error)) return false;
  for (int g = 0; g < groups; ++g) {
    if (!run_group()) return false;
    if (!check(cudaEventRecord(events[g + 1], stream), "cudaEventRecord", error)) return false;
  }
  if (!check(cudaStreamSynchronize(stream), "the timed launches", error)) return false;
  std::vector<double> group_us(static_cast<std::size_t>(groups));
  for (int g = 0; g < groups; ++g) group_us[g] = elapsed_us(events[g], events[g + 1]);
  summarize(group_us, per_group, timing);
  timing.method = graph.ok() ? "cuda_graph" : "stream_events";
  return true;
#endif
}

}  // namespace tern::cuda_bench
