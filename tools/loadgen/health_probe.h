#pragma once

// GETs /health every interval on a connection of its own, on a thread and event loop of its
// own, so that its latencies measure the server and not the load generator's busy loop.
#include <memory>
#include <string>

#include "tools/loadgen/run_result.h"

namespace tern::loadgen {

class HealthProbe {
 public:
  HealthProbe(std::string host, std::string port, int interval_ms);
  ~HealthProbe();
  HealthProbe(const HealthProbe&) = delete;
  HealthProbe& operator=(const HealthProbe&) = delete;

  void start();
  void stop();  // waits for a probe in flight
  HealthStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tern::loadgen
