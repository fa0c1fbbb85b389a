#pragma once

#include <string_view>

#include "service/api/api_error.h"
#include "service/api/chat_request.h"

namespace tern::service::openai {

// POST /v1/chat/completions, with vLLM's extensions. Unknown fields are ignored.
api::ApiResult<api::ChatRequest> parse_chat_completion_request(std::string_view body);

}  // namespace tern::service::openai
