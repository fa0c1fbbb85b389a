#pragma once

// `tern bench --op-profile`: where a prefill pass's and a decode step's time goes, op by op, on
// the backend's own clock (engine/backend/op_timing.h).

#include <span>
#include <string_view>

#include "engine/backend/op_timing.h"

namespace tern::tools {

// A Markdown table of `ops`, the ops of `passes` forward passes, grouped by op and operand (the
// output head apart from the layers), the largest first: calls and milliseconds per pass, the
// share of the ops' total and microseconds per call. Then the ops' total per pass beside
// `wall_seconds`, the host's measure of the same passes: what no op took is launches, gaps
// between them and the host's own work.
void print_op_profile(std::string_view title, std::span<const engine::OpTime> ops, int passes,
                      double wall_seconds);

}  // namespace tern::tools
