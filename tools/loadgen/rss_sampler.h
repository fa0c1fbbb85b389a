#pragma once

// Samples a process's resident memory (VmRSS in /proc/PID/status): once when built (the
// baseline), then every 100 ms on a thread of its own until stop().
#include <atomic>
#include <cstdint>
#include <optional>
#include <thread>

#include "tools/loadgen/run_result.h"

namespace tern::loadgen {

// VmRSS of `pid` in KiB; nullopt when the process or the field is gone.
std::optional<std::int64_t> read_rss_kib(int pid);

class RssSampler {
 public:
  explicit RssSampler(int pid);
  ~RssSampler() { stop(); }
  RssSampler(const RssSampler&) = delete;
  RssSampler& operator=(const RssSampler&) = delete;

  void start();
  void stop();
  // The baseline and the peak; per_stream_kib divides their difference by `peak_open_streams`.
  RssStats stats(int peak_open_streams) const;

 private:
  void sample();

  const int pid_;
  std::int64_t baseline_kib_ = 0;
  std::atomic<std::int64_t> peak_kib_{0};
  std::atomic<int> samples_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace tern::loadgen
