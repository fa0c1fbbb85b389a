#pragma once

// A run's summary, and its two renderings: a markdown table for people and JSON for scripts.
// docs/loadgen.md lists the JSON fields.
#include <map>
#include <string>
#include <vector>

#include "tools/loadgen/latency_stats.h"
#include "tools/loadgen/options.h"
#include "tools/loadgen/run_result.h"

namespace tern::loadgen {

struct Summary {
  const RunResult* run = nullptr;
  int completed = 0;
  int errors = 0;
  std::map<std::string, int> errors_by_kind;
  double requests_per_s = 0;
  long long output_tokens = 0;  // completion_tokens summed over completed requests
  long long prompt_tokens = 0;
  double output_tokens_per_s = 0;
  Percentiles ttft_ms;
  Percentiles itl_ms;
  Percentiles e2e_ms;
};

Summary summarize(const RunResult& run);

// One run: a metric | value table, then errors by kind.
std::string markdown_report(const Summary& summary);
// A sweep: one row per point.
std::string markdown_sweep(const std::vector<Summary>& points);

// One run as a JSON object; a sweep as {"tool", "sweep": [run objects]}.
std::string json_report(const Options& options, const Summary& summary);
std::string json_sweep(const Options& options, const std::vector<Summary>& points);

}  // namespace tern::loadgen
