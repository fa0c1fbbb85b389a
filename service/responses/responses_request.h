#pragma once

// POST /v1/responses: OpenAI's Responses request read into the internal chat form that
// start_chat and the chat templates take, plus the settings the Response object echoes back.
// Fields that clients such as Codex send and that do not change the answer (include, store,
// metadata, prompt_cache_key, reasoning.summary, text.verbosity, non-function tools, ...) are
// accepted; those that would (a forced tool call, structured outputs, background mode, stored
// prompts and conversations) are a 400 naming the field. docs/api.md lists both.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "service/api/api_error.h"
#include "service/api/chat_request.h"

namespace tern::service::responses {

// What the Response object repeats from its request, as OpenAI's does.
struct ResponseSettings {
  std::optional<std::string> instructions;
  std::optional<int> max_output_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::string tools_json = "[]";              // the function tools as sent, in the Responses shape
  std::string tool_choice_json = "\"auto\"";  // echoed as given
  std::string text_format_json = R"({"type":"text"})";  // text.format, echoed as given
  std::string metadata_json = "{}";
  bool parallel_tool_calls = true;
  std::optional<std::string> reasoning_effort;
  std::optional<std::string> previous_response_id;
  bool store = true;
  std::optional<std::string> user;
};

// The chat request start_chat runs, and the rest. When `settings.instructions` is set, the first
// message is their system message; a follow-up's stored conversation goes right after it.
struct ResponsesRequest : api::ChatRequest {
  ResponseSettings settings;

  // Where a previous response's conversation is inserted, and where the part to store begins.
  std::size_t conversation_start() const { return settings.instructions ? 1 : 0; }
};

api::ApiResult<ResponsesRequest> parse_responses_request(std::string_view body);

}  // namespace tern::service::responses
