#pragma once

// Each chat door's parser with one signature, so a test can run the same conversation through
// OpenAI's chat completions, the Responses API and Anthropic's Messages.
#include <string_view>
#include <utility>

#include "service/anthropic/messages_request.h"
#include "service/api/chat_request.h"
#include "service/openai/chat_completion_parser.h"
#include "service/responses/responses_request.h"

namespace tern::testing {

inline service::api::ApiResult<service::api::ChatRequest> parse_chat(std::string_view body) {
  return service::openai::parse_chat_completion_request(body);
}

inline service::api::ApiResult<service::api::ChatRequest> parse_responses(std::string_view body) {
  auto parsed = service::responses::parse_responses_request(body);
  if (!parsed) return parsed.error();
  return service::api::ChatRequest(std::move(*parsed));
}

inline service::api::ApiResult<service::api::ChatRequest> parse_anthropic(std::string_view body) {
  return service::anthropic::parse_messages_request(body);
}

}  // namespace tern::testing
