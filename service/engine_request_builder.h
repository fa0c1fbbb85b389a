#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/request.h"
#include "engine/served_model.h"
#include "service/api/api_error.h"
#include "service/api/sampling_request.h"

namespace tern::service {

// How a request asked for log-probabilities and what its prompt is called in errors.
struct RequestShape {
  bool chat = false;  // chat: the prompt is "messages", and max_tokens defaults to the rest
  bool logprobs = false;
  int top_logprobs = 0;
  std::string_view prompt_param = "prompt";
};

// An engine request from the OpenAI fields; every unset field takes the model's default (the
// operator's config, then the model's generation config, then the engine's). A prompt that
// leaves no room in the context is 400 context_length_exceeded with the counts.
api::ApiResult<engine::Request> build_engine_request(const engine::ServedModel& model,
                                                     const api::SamplingRequest& sampling,
                                                     std::vector<std::int32_t> prompt_ids,
                                                     const RequestShape& shape);

// Submits a request's prompts to the model's engine, all or none, charged to `client`. Errors
// come back as the client-facing ApiError of their kind (service/engine_error.h).
api::ApiResult<std::vector<engine::RequestHandle>> submit_to_engine(
    const engine::ServedModel& model, std::vector<engine::Request> requests,
    std::string_view client, std::string_view prompt_param);

}  // namespace tern::service
