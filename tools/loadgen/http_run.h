#pragma once

// The workload over HTTP: `concurrency` client coroutines on one event loop, each with a
// keep-alive connection, sending streaming requests back to back until `requests` are done.
#include <string>

#include "engine/expected.h"
#include "tools/loadgen/options.h"
#include "tools/loadgen/run_result.h"

namespace tern::loadgen {

// The first model id of GET /v1/models; the error says why the server could not be asked.
Expected<std::string> fetch_default_model(const Options& options);

RunResult run_http(const Options& options, int concurrency, int requests, const std::string& model);

}  // namespace tern::loadgen
