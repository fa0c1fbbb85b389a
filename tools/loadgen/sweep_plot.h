#pragma once

// Draws a sweep with gnuplot (run as a child process): output tokens/s against concurrency, and
// TTFT p50/p99 against concurrency, side by side in one PNG.
#include <string>
#include <vector>

#include "engine/expected.h"
#include "tools/loadgen/report.h"

namespace tern::loadgen {

// Fails when gnuplot is not on PATH (it says which package to install) or when it fails.
Status plot_sweep(const std::vector<Summary>& points, const std::string& png_path);

}  // namespace tern::loadgen
