#pragma once

// cuda_kernel_bench's output: one JSON object per line on stdout, flushed as it is written, so a
// run cut short keeps every line it finished. Each measurement's record holds what it measured,
// its times, the bytes and FLOPs it counts, the rates they give and, where the bounds are known,
// its share of the roofline (docs/benchmarks.md, "CUDA kernel benchmark").

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::cuda_bench {

// One line of JSON, keys in the order added. A number that is not finite is written as null.
class JsonLine {
 public:
  JsonLine& add(std::string_view key, std::string_view value);
  JsonLine& add(std::string_view key, const char* value) {
    return add(key, std::string_view(value));
  }
  JsonLine& add(std::string_view key, long long value);
  JsonLine& add(std::string_view key, int value) { return add(key, static_cast<long long>(value)); }
  JsonLine& add(std::string_view key, double value);
  JsonLine& add(std::string_view key, bool value);
  // Writes the line to stdout and flushes it.
  void print();

 private:
  void key(std::string_view name);
  std::string text_ = "{";
};

// What a case is, as its record names it.
struct CaseInfo {
  std::string kernel;  // gemv, gemm, attention_decode, ...
  std::string name;    // which matrix or variant: ffn_up, residual, ...
  std::string format;  // weight format, KV cache type, or f32
  std::string shape;   // e.g. "14336x4096"
  // Integer parameters, all positive: tokens, rows, cols, context, batch, ...
  std::vector<std::pair<std::string, long long>> params;
  double bytes = 0;  // bytes the kernel must move (read + written)
  double flops = 0;  // floating-point (or integer dot-product) operations; 0 when not counted
};

// The limits shares are taken against: bytes per second and operations per second.
struct Bounds {
  double gbs = 0;          // 0: unknown
  std::string gbs_source;  // "argument" (--bound-gbs) or "measured" (this run's probe)
  double tflops = 0;       // 0: unknown
};

struct Timing {
  double mean_us = 0;  // mean over groups of a group's time per launch
  double min_us = 0;   // the best group's time per launch
  int launches_per_group = 0;
  int groups = 0;
  int instances = 0;   // input copies the launches rotate over (past the device's L2)
  std::string method;  // cuda_graph, stream_events or emulator_wall_clock
};

// The record of a measured case. Rates and the share use time_us_min.
void print_result(const CaseInfo& info, const Timing& timing, const Bounds& bounds);
// The record of a case that failed (allocation, launch or timing): status "error" and why.
void print_error(const CaseInfo& info, std::string_view error);
// The record of a case --list names, without running it.
void print_planned(const CaseInfo& info);

}  // namespace tern::cuda_bench
