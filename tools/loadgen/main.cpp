// tern-loadgen: a load generator for tern's OpenAI-compatible streaming API (docs/loadgen.md).
#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "tools/loadgen/engine_run.h"
#include "tools/loadgen/http_run.h"
#include "tools/loadgen/options.h"
#include "tools/loadgen/report.h"
#include "tools/loadgen/sweep_plot.h"

namespace {

using namespace tern::loadgen;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// Every open stream is a socket: lift the soft descriptor limit to the hard one.
void raise_file_limit(int concurrency) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur != RLIM_INFINITY && static_cast<rlim_t>(concurrency) + 32 > limit.rlim_cur) {
    fmt::print(stderr,
               "tern-loadgen: warning: the open-file limit {} is too low for {} connections; "
               "raise it with ulimit -n\n",
               static_cast<unsigned long long>(limit.rlim_cur), concurrency);
  }
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

int run(const Options& options) {
  std::vector<int> points = options.sweep;
  const bool sweep = !points.empty();
  if (!sweep) points.push_back(options.concurrency);
  int largest = 0;
  for (const int point : points) largest = std::max(largest, point);
  raise_file_limit(largest);

  std::unique_ptr<DirectEngine> direct;
  std::string model = options.model;
  if (!options.engine_model_path.empty()) {
    if (options.endpoint == Endpoint::chat) {
      fmt::print(stderr, "tern-loadgen: --engine runs the completions workload only\n");
      return kExitUsage;
    }
    auto loaded = DirectEngine::load(options);
    if (!loaded) {
      fmt::print(stderr, "tern-loadgen: {}\n", loaded.error().message);
      return kExitFailure;
    }
    direct = std::move(*loaded);
  } else if (model.empty()) {
    auto fetched = fetch_default_model(options);
    if (!fetched) {
      fmt::print(stderr, "tern-loadgen: {} (is the server running? pass --url)\n",
                 fetched.error().message);
      return kExitFailure;
    }
    model = *fetched;
  }

  std::vector<RunResult> runs;
  runs.reserve(points.size());
  for (const int concurrency : points) {
    const int requests =
        !sweep ? options.requests : (options.requests_given ? options.requests : 2 * concurrency);
    if (sweep)
      fmt::print(stderr, "tern-loadgen: concurrency {}, {} requests\n", concurrency, requests);
    runs.push_back(direct ? direct->run(options, concurrency, requests)
                          : run_http(options, concurrency, requests, model));
  }
  std::vector<Summary> summaries;
  for (const RunResult& result : runs) summaries.push_back(summarize(result));

  const std::string json =
      sweep ? json_sweep(options, summaries) : json_report(options, summaries.front());
  if (options.json_path == "-") {
    fmt::print("{}", json);
  } else {
    fmt::print("{}", sweep ? markdown_sweep(summaries) : markdown_report(summaries.front()));
    if (!options.json_path.empty() && !write_file(options.json_path, json)) {
      fmt::print(stderr, "tern-loadgen: cannot write {}\n", options.json_path);
      return kExitFailure;
    }
  }
  std::fflush(stdout);
  if (!options.plot_path.empty()) {
    if (auto plotted = plot_sweep(summaries, options.plot_path); !plotted) {
      fmt::print(stderr, "tern-loadgen: {}\n", plotted.message());
      return kExitFailure;
    }
  }
  int failed = 0;
  int completed = 0;
  for (const Summary& s : summaries) {
    failed += s.errors;
    completed += s.completed;
  }
  if (failed > 0) {
    fmt::print(stderr, "tern-loadgen: {} of {} requests failed\n", failed, failed + completed);
    return kExitFailure;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto options = parse_options(argc, argv);
  if (!options) {
    fmt::print(stderr, "tern-loadgen: {}\n(see tern-loadgen --help)\n", options.error().message);
    return kExitUsage;
  }
  if (options->help) {
    fmt::print("{}", usage_text());
    return 0;
  }
  return run(*options);
}
