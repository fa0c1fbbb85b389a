#pragma once

// Direct mode: the same workload as run_http (same prompts, tokenized as /v1/completions
// tokenizes a string prompt, same sampling), submitted in-process to an engine loaded as
// `tern serve --model PATH` loads it. The difference from an HTTP run is the cost of HTTP and SSE.
#include <memory>
#include <string>

#include "engine/expected.h"
#include "tools/loadgen/options.h"
#include "tools/loadgen/run_result.h"

namespace tern::loadgen {

class DirectEngine {
 public:
  // Loads the model and starts its engine; the error names the file and the reason.
  static Expected<std::unique_ptr<DirectEngine>> load(const Options& options);
  ~DirectEngine();
  DirectEngine(const DirectEngine&) = delete;
  DirectEngine& operator=(const DirectEngine&) = delete;

  const std::string& model_name() const;
  RunResult run(const Options& options, int concurrency, int requests);

 private:
  struct Impl;
  explicit DirectEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tern::loadgen
