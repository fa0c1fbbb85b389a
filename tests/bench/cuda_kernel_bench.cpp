// cuda_kernel_bench: times tern's CUDA kernels at Llama-3-8B shapes against the device's own
// limits, one JSON record per line on stdout (docs/benchmarks.md, "CUDA kernel benchmark").
// Built twice from one source: cuda_kernel_bench against nvcc's kernels on a GPU, and
// cuda_kernel_bench_emulated against the SIMT emulator's build, which CI runs with --tiny.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tests/bench/cuda_kernel_bench_bandwidth.h"
#include "tests/bench/cuda_kernel_bench_cases.h"

namespace tern::cuda_bench {
namespace {

constexpr const char* kUsage = R"(usage: cuda_kernel_bench [options]
  --only NAME,...        what to measure (default: everything): bandwidth, kernels (every
                         kernel below), matmul (gemv, gemm, quantize_q8_1), attention
                         (attention_decode, attention_prefill), kv_store, rms_norm, rope,
                         logits (top_k, argmax, logit_row_sums), or any of those kernel names
  --formats NAME,...     weight formats of gemv and gemm (default: f32,f16,bf16,q8_0,q4_0,q4_k,q6_k)
  --tiny                 small shapes (for the SIMT emulator; seconds)
  --reps N               timed groups per measurement, and timed copies of the bandwidth probe
                         (default: as many as --target-ms allows, 3 to 100; 2 with --tiny)
  --target-ms X          device time to aim for per measurement (default 60)
  --bound-gbs X          memory bound in GB/s for the shares (default: this run's copy probe)
  --bound-tflops Y       compute bound in TFLOP/s for the shares (default: none)
  --bandwidth-mib N      buffer the copy probe copies (default 1024; 16 with --tiny)
  --memory-limit-mib X   most device memory the bench holds at once (default: no limit)
  --no-graphs            launch each group to the stream instead of replaying a CUDA graph
  --list                 print the planned measurements (status "planned") and run nothing
Records go to stdout, one JSON object a line; the exit status is 1 when any failed, 2 for bad
arguments.
)";

struct Options {
  std::set<std::string> only;  // kernel names; empty: all
  std::vector<TensorType> formats;
  bool tiny = false;
  int reps = 0;
  double target_ms = 60;
  double bound_gbs = 0;
  double bound_tflops = 0;
  long long bandwidth_mib = 0;
  double memory_limit_mib = 0;
  bool graphs = true;
  bool list = false;
};

const std::vector<std::string> kKernels = {
    "gemv",     "gemm", "quantize_q8_1", "attention_decode", "attention_prefill", "kv_store",
    "rms_norm", "rope", "top_k",         "argmax",           "logit_row_sums"};

// The kernel names a name of --only stands for; empty for an unknown name.
std::vector<std::string> expand(const std::string& name) {
  if (name == "bandwidth") return {"bandwidth"};
  if (name == "kernels") return kKernels;
  if (name == "matmul") return {"gemv", "gemm", "quantize_q8_1"};
  if (name == "attention") return {"attention_decode", "attention_prefill"};
  if (name == "logits") return {"top_k", "argmax", "logit_row_sums"};
  if (std::find(kKernels.begin(), kKernels.end(), name) != kKernels.end()) return {name};
  return {};
}

std::vector<std::string> split(std::string_view list) {
  std::vector<std::string> parts;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view part = list.substr(0, comma);
    if (!part.empty()) parts.emplace_back(part);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return parts;
}

bool fail(const std::string& message) {
  std::fprintf(stderr, "cuda_kernel_bench: %s\n%s", message.c_str(), kUsage);
  return false;
}

bool parse_number(const char* option, const char* text, double low, double& out) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(value) || value < low) {
    char least[32];
    std::snprintf(least, sizeof least, "%g", low);
    return fail(std::string(option) + " takes a number of at least " + least + ", not '" + text +
                "'");
  }
  out = value;
  return true;
}

bool parse_options(int argc, char** argv, Options& options) {
  const Sweep all = full_sweep();
  options.formats = all.formats;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg == "--tiny") {
      options.tiny = true;
      continue;
    }
    if (arg == "--no-graphs") {
      options.graphs = false;
      continue;
    }
    if (arg == "--list") {
      options.list = true;
      continue;
    }
    if (i + 1 >= argc) return fail(std::string(arg) + " needs a value");
    const char* value = argv[++i];
    double number = 0;
    if (arg == "--only") {
      for (const std::string& name : split(value)) {
        const std::vector<std::string> kernels = expand(name);
        if (kernels.empty()) return fail("--only: unknown name '" + name + "'");
        options.only.insert(kernels.begin(), kernels.end());
      }
      if (options.only.empty()) return fail("--only needs at least one name");
    } else if (arg == "--formats") {
      options.formats.clear();
      for (const std::string& name : split(value)) {
        const auto known = std::find_if(all.formats.begin(), all.formats.end(),
                                        [&](TensorType t) { return name == format_name(t); });
        if (known == all.formats.end()) return fail("--formats: unknown format '" + name + "'");
        options.formats.push_back(*known);
      }
      if (options.formats.empty()) return fail("--formats needs at least one format");
    } else if (arg == "--reps") {
      if (!parse_number("--reps", value, 1, number)) return false;
      options.reps = static_cast<int>(std::min(number, 100000.0));
    } else if (arg == "--target-ms") {
      if (!parse_number("--target-ms", value, 0.001, options.target_ms)) return false;
    } else if (arg == "--bound-gbs") {
      if (!parse_number("--bound-gbs", value, 1e-9, options.bound_gbs)) return false;
    } else if (arg == "--bound-tflops") {
      if (!parse_number("--bound-tflops", value, 1e-9, options.bound_tflops)) return false;
    } else if (arg == "--bandwidth-mib") {
      if (!parse_number("--bandwidth-mib", value, 1, number)) return false;
      options.bandwidth_mib = static_cast<long long>(number);
    } else if (arg == "--memory-limit-mib") {
      if (!parse_number("--memory-limit-mib", value, 0.001, options.memory_limit_mib)) return false;
    } else {
      return fail("unknown option '" + std::string(arg) + "'");
    }
  }
  return true;
}

bool selected(const Options& options, const std::string& kernel) {
  return options.only.empty() || options.only.count(kernel) > 0;
}

void print_device(const DeviceInfo& device) {
  JsonLine line;
  line.add("kernel", "device").add("status", "ok").add("name", device.name);
  line.add("emulated", device.emulated);
  if (!device.emulated) {
    line.add("compute_capability",
             std::to_string(device.compute_major) + "." + std::to_string(device.compute_minor));
    line.add("memory_bytes", device.memory_bytes).add("l2_bytes", device.l2_bytes);
    line.add("multiprocessors", device.multiprocessors);
  }
  line.print();
}

// Copies of a memory-bound case's inputs whose bytes together exceed `rotate_bytes` (the bytes
// the L2 cache could keep between launches), at most 64.
int instances_for(const Case& c, double rotate_bytes) {
  if (c.instance_bytes <= 0 || rotate_bytes <= 0) return 1;
  return static_cast<int>(std::clamp(std::ceil(rotate_bytes / c.instance_bytes), 1.0, 64.0));
}

// Prepares and times one case; prints its record. False when it failed.
bool run_case(const Case& c, const TimingPlan& base_plan, double rotate_bytes, cudaStream_t stream,
              const Bounds& bounds) {
  TimingPlan plan = base_plan;
  plan.instances = instances_for(c, rotate_bytes);
  std::string error;
  bool ok = false;
  {
    Prepared prepared;
    Timing timing;
    if (!c.prepare(plan.instances, prepared, error)) {
      error = "setting up: " + error;
    } else if (const cudaError_t status = cudaDeviceSynchronize(); status != cudaSuccess) {
      error = "setting up: " + describe_error(status);
    } else if (time_launches(prepared.launch, plan, stream, timing, error)) {
      print_result(c.info, timing, bounds);
      ok = true;
    }
  }
  if (!ok) {
    cudaGetLastError();  // clear a launch error so that the next case starts clean
    print_error(c.info, error);
    std::fprintf(stderr, "cuda_kernel_bench: %s %s %s %s failed: %s\n", c.info.kernel.c_str(),
                 c.info.name.c_str(), c.info.format.c_str(), c.info.shape.c_str(), error.c_str());
  }
  return ok;
}

int run(const Options& options) {
  Sweep sweep = options.tiny ? tiny_sweep() : full_sweep();
  sweep.formats = options.formats;
  std::vector<Case> cases;
  for (auto group : {matmul_cases, attention_cases, row_cases}) {
    for (Case& c : group(sweep)) {
      if (selected(options, c.info.kernel)) cases.push_back(std::move(c));
    }
  }
  if (options.list) {
    for (const Case& c : cases) print_planned(c.info);
    return 0;
  }
  set_memory_limit(static_cast<std::size_t>(options.memory_limit_mib * (1 << 20)));
  const auto started = std::chrono::steady_clock::now();
  DeviceInfo device;
  std::string error;
  if (!query_device(device, error)) {
    JsonLine().add("kernel", "device").add("status", "error").add("error", error).print();
    std::fprintf(stderr, "cuda_kernel_bench: %s\n", error.c_str());
    return 1;
  }
  print_device(device);

  cudaStream_t stream = nullptr;
#if !defined(TERN_SIMT_EMULATED)
  if (const cudaError_t status = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      status != cudaSuccess) {
    JsonLine()
        .add("kernel", "device")
        .add("status", "error")
        .add("error", "cudaStreamCreate: " + describe_error(status))
        .print();
    return 1;
  }
#endif

  int failed = 0;
  int measured = 0;
  Bounds bounds;
  if (options.bound_gbs > 0) {
    bounds.gbs = options.bound_gbs;
    bounds.gbs_source = "argument";
  }
  bounds.tflops = options.bound_tflops;
  if (selected(options, "bandwidth")) {
    const long long mib =
        options.bandwidth_mib > 0 ? options.bandwidth_mib : (options.tiny ? 16 : 1024);
    const int copies = options.reps > 0 ? options.reps : (options.tiny ? 3 : 20);
    CopyBandwidth copy;
    if (measure_copy_bandwidth(static_cast<std::size_t>(mib) << 20, copies, stream, copy, error)) {
      ++measured;
      if (bounds.gbs == 0) {
        bounds.gbs = copy.best_gbs;
        bounds.gbs_source = "measured";
      }
    } else {
      ++failed;
      std::fprintf(stderr, "cuda_kernel_bench: bandwidth failed: %s\n", error.c_str());
    }
  }

  TimingPlan plan;
  plan.groups = options.reps > 0 ? options.reps : (options.tiny ? 2 : 0);
  plan.target_us = options.target_ms * 1000;
  plan.use_graphs = options.graphs;
  // Four times the L2 cache: an LRU-like cache then keeps nothing of a copy until its next turn.
  const double rotate_bytes = 4.0 * static_cast<double>(device.l2_bytes);
  for (const Case& c : cases) {
    if (run_case(c, plan, rotate_bytes, stream, bounds)) {
      ++measured;
    } else {
      ++failed;
    }
  }
#if !defined(TERN_SIMT_EMULATED)
  cudaStreamDestroy(stream);
#endif
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::fprintf(stderr, "cuda_kernel_bench: %d measured, %d failed, %.1f s on %s\n", measured,
               failed, seconds, device.name.c_str());
  return failed > 0 ? 1 : 0;
}

}  // namespace
}  // namespace tern::cuda_bench

int main(int argc, char** argv) {
  tern::cuda_bench::Options options;
  if (!tern::cuda_bench::parse_options(argc, argv, options)) return 2;
  return tern::cuda_bench::run(options);
}
