#pragma once

// POST /v1/messages and /v1/messages/count_tokens: Anthropic's request read into the internal
// chat form that start_chat and the chat templates take. Fields that real clients send and that
// do not change the output (metadata, cache_control, service_tier, context_management, ...) are
// accepted and ignored; those that would (structured outputs, server tools, a forced tool call)
// are a 400 naming the field until tern implements them. docs/api.md lists both.
#include <string_view>

#include "service/api/api_error.h"
#include "service/api/chat_request.h"
#include "service/api/tokenize_request.h"

namespace tern::service::anthropic {

// max_tokens is required, as in Anthropic's API. A final assistant message is a prefill: the
// answer continues it (continue_final_message).
api::ApiResult<api::ChatRequest> parse_messages_request(std::string_view body);

// The same body with max_tokens optional, as the tokenize request that renders the prompt the
// way start_chat does (template, tools, kwargs, generation prompt, no added special tokens).
api::ApiResult<api::TokenizeRequest> parse_count_tokens_request(std::string_view body);

}  // namespace tern::service::anthropic
