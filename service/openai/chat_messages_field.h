#pragma once

// Internal to service/openai's parsers: `messages`, shared by chat completions and /tokenize.
#include <optional>
#include <string_view>
#include <vector>

#include "service/api/chat_request.h"
#include "service/api/json_reader.h"

namespace tern::service::openai {

api::json::Check read_chat_messages(const api::json::element& value,
                                    std::vector<api::ChatMessage>& messages);

// tools, tool_choice and chat_template_kwargs, checked for shape and kept as JSON.
api::json::Check read_tools(const api::json::element& value, std::string& tools_json);
api::json::Check read_tool_choice(const api::json::element& value, std::string& tool_choice_json);
api::json::Check read_template_kwargs(const api::json::element& value, std::string& kwargs_json);

}  // namespace tern::service::openai
