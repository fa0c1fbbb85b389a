#include "service/api/reasoning_effort.h"

#include <fmt/format.h>

#include "service/api/sampling_request.h"

namespace tern::service::api {

json::Check read_reasoning_effort(const json::element& value, std::string_view param,
                                  std::optional<int>& budget) {
  std::string_view effort;
  if (value.get_string().get(effort) != simdjson::SUCCESS) {
    return json::wrong_type(std::string(param), "string", value);
  }
  if (effort == "none" || effort == "minimal") {
    budget = 0;
  } else if (effort == "low") {
    budget = kLowReasoningEffortTokens;
  } else if (effort == "medium") {
    budget = kMediumReasoningEffortTokens;
  } else if (effort == "high" || effort == "xhigh") {
    budget.reset();
  } else {
    return invalid_request(std::string(param),
                           fmt::format("Invalid value for '{}': '{}' is not none, minimal, low, "
                                       "medium, high or xhigh",
                                       param, effort),
                           "invalid_value");
  }
  return std::nullopt;
}

}  // namespace tern::service::api
