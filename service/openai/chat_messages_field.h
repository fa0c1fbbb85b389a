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

// tools and chat_template_kwargs, checked for shape and read into values for the template;
// tool_choice into the request's ToolChoice and required_tool.
api::json::Check read_tools(const api::json::element& value, engine::chat::Value& tools);
api::json::Check read_tool_choice(const api::json::element& value, api::ChatRequest& request);
api::json::Check read_template_kwargs(const api::json::element& value, engine::chat::Value& kwargs);

}  // namespace tern::service::openai
