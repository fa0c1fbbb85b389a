#pragma once

// What one run measured: every request's timings or its error, plus the run-wide observations
// (wall time, peak open streams, health probes, the server's memory).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tern::loadgen {

struct RequestResult {
  double ttft_ms = -1;         // send -> first content token; < 0 when none came
  double e2e_ms = 0;           // send -> [DONE] (or the error)
  std::vector<double> itl_ms;  // gaps between successive content chunks
  int completion_tokens = 0;   // from the usage chunk
  int prompt_tokens = 0;
  std::string error;  // empty: completed; otherwise its kind, e.g. "http_429"
};

struct HealthStats {
  int probes = 0;    // answered 200
  int failures = 0;  // anything else: a status, a reset, a timeout
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  double max_at_s = 0;  // when the slowest probe was sent, from the probe's start
  int over_50ms = 0;    // probes slower than 50 ms
  std::vector<std::pair<double, double>> slow;  // (sent at s, ms) of each probe over 50 ms
};

struct RssStats {
  int pid = 0;
  int samples = 0;
  std::int64_t baseline_kib = 0;  // before the first request
  std::int64_t peak_kib = 0;      // during the run
  double per_stream_kib = 0;      // (peak - baseline) / peak open streams
};

struct RunResult {
  std::string mode;  // "http" or "engine"
  std::string model;
  int concurrency = 0;
  int requests = 0;
  double duration_s = 0;
  int peak_open_streams = 0;
  std::vector<RequestResult> results;  // by request index
  std::optional<HealthStats> health;
  std::optional<RssStats> rss;
};

}  // namespace tern::loadgen
