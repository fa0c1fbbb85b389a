#pragma once

// Internal to service/openai's parsers: `messages`, shared by chat completions and /tokenize.
#include <optional>
#include <string_view>
#include <vector>

#include "service/openai/chat_request.h"
#include "service/openai/json_reader.h"

namespace tern::service::openai {

json::Check read_chat_messages(const json::element& value, std::vector<ChatMessage>& messages);

// tools, tool_choice and chat_template_kwargs, checked for shape and kept as JSON.
json::Check read_tools(const json::element& value, std::string& tools_json);
json::Check read_tool_choice(const json::element& value, std::string& tool_choice_json);
json::Check read_template_kwargs(const json::element& value, std::string& kwargs_json);

// OpenAI's reasoning effort (chat's reasoning_effort, the Responses API's reasoning.effort) as a
// reasoning budget, since tern's reasoning models take a token cap (docs/api.md): none and minimal
// 0, low and medium kLow/kMediumReasoningEffortTokens, high and xhigh no cap.
json::Check read_reasoning_effort(const json::element& value, std::string_view param,
                                  std::optional<int>& budget);

}  // namespace tern::service::openai
