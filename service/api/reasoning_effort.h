#pragma once

#include <optional>
#include <string_view>

#include "service/api/json_reader.h"

namespace tern::service::api {

// OpenAI's reasoning effort (chat's reasoning_effort, the Responses API's reasoning.effort) as a
// reasoning budget, since tern's reasoning models take a token cap (docs/api.md): none and minimal
// 0, low and medium kLow/kMediumReasoningEffortTokens, high and xhigh no cap.
json::Check read_reasoning_effort(const json::element& value, std::string_view param,
                                  std::optional<int>& budget);

}  // namespace tern::service::api
