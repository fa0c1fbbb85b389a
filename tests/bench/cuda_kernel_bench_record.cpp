#include "tests/bench/cuda_kernel_bench_record.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/json_string.h"

namespace tern::cuda_bench {
namespace {

// The fields every record of a case starts with.
JsonLine describe(const CaseInfo& info) {
  JsonLine line;
  line.add("kernel", info.kernel).add("case", info.name).add("format", info.format);
  line.add("shape", info.shape);
  for (const auto& [key, value] : info.params) line.add(key, value);
  return line;
}

void add_counts(JsonLine& line, const CaseInfo& info) {
  line.add("bytes", info.bytes);
  if (info.flops > 0) line.add("flops", info.flops);
}

}  // namespace

void JsonLine::key(std::string_view name) {
  if (text_.size() > 1) text_ += ',';
  append_json_string(text_, name);
  text_ += ':';
}

JsonLine& JsonLine::add(std::string_view name, std::string_view value) {
  key(name);
  append_json_string(text_, value);
  return *this;
}

JsonLine& JsonLine::add(std::string_view name, long long value) {
  key(name);
  text_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::add(std::string_view name, double value) {
  key(name);
  if (!std::isfinite(value)) {
    text_ += "null";
    return *this;
  }
  // Whole numbers (byte and FLOP counts) exactly, others to 6 significant digits.
  char number[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(number, sizeof number, "%.0f", value);
  } else {
    std::snprintf(number, sizeof number, "%.6g", value);
  }
  text_ += number;
  return *this;
}

JsonLine& JsonLine::add(std::string_view name, bool value) {
  key(name);
  text_ += value ? "true" : "false";
  return *this;
}

void JsonLine::print() {
  std::fputs(text_.c_str(), stdout);
  std::fputs("}\n", stdout);
  std::fflush(stdout);
  text_.resize(1);  // "{": the line is reusable
}

void print_result(const CaseInfo& info, const Timing& timing, const Bounds& bounds) {
  JsonLine line = describe(info);
  line.add("status", "ok");
  line.add("time_us_mean", timing.mean_us).add("time_us_min", timing.min_us);
  add_counts(line, info);
  const double seconds = timing.min_us * 1e-6;
  line.add("gbs", info.bytes / seconds / 1e9);
  if (info.flops > 0) line.add("tflops", info.flops / seconds / 1e12);
  // The roofline: the least time the bytes and the FLOPs allow, over the time taken.
  const double memory_seconds = bounds.gbs > 0 ? info.bytes / (bounds.gbs * 1e9) : 0;
  const double compute_seconds =
      bounds.tflops > 0 && info.flops > 0 ? info.flops / (bounds.tflops * 1e12) : 0;
  if (bounds.gbs > 0) line.add("bound_gbs", bounds.gbs).add("bound_gbs_source", bounds.gbs_source);
  if (bounds.tflops > 0) line.add("bound_tflops", bounds.tflops);
  const double bound_seconds = std::max(memory_seconds, compute_seconds);
  if (bound_seconds > 0) {
    line.add("limit", memory_seconds >= compute_seconds ? "memory" : "compute");
    line.add("share_of_bound", bound_seconds / seconds);
  }
  line.add("launches_per_group", timing.launches_per_group).add("groups", timing.groups);
  line.add("instances", timing.instances).add("timing", timing.method);
  line.print();
}

void print_error(const CaseInfo& info, std::string_view error) {
  JsonLine line = describe(info);
  line.add("status", "error").add("error", error);
  line.print();
}

void print_planned(const CaseInfo& info) {
  JsonLine line = describe(info);
  line.add("status", "planned");
  add_counts(line, info);
  line.print();
}

}  // namespace tern::cuda_bench
