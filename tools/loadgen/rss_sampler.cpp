#include "tools/loadgen/rss_sampler.h"

#include <chrono>
#include <fstream>
#include <string>

namespace tern::loadgen {

std::optional<std::int64_t> read_rss_kib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return std::nullopt;
}

RssSampler::RssSampler(int pid) : pid_(pid) {
  baseline_kib_ = read_rss_kib(pid_).value_or(0);
  peak_kib_ = baseline_kib_;
  samples_ = baseline_kib_ > 0 ? 1 : 0;
}

void RssSampler::sample() {
  if (const auto rss = read_rss_kib(pid_)) {
    samples_.fetch_add(1);
    std::int64_t peak = peak_kib_.load();
    while (*rss > peak && !peak_kib_.compare_exchange_weak(peak, *rss)) {
    }
  }
}

void RssSampler::start() {
  thread_ = std::thread([this] {
    while (!stopping_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      sample();
    }
  });
}

void RssSampler::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  thread_.join();
  sample();  // the state at the end counts too
}

RssStats RssSampler::stats(int peak_open_streams) const {
  RssStats stats;
  stats.pid = pid_;
  stats.samples = samples_.load();
  stats.baseline_kib = baseline_kib_;
  stats.peak_kib = peak_kib_.load();
  if (peak_open_streams > 0) {
    stats.per_stream_kib =
        static_cast<double>(stats.peak_kib - stats.baseline_kib) / peak_open_streams;
  }
  return stats;
}

}  // namespace tern::loadgen
