#pragma once

// Internal to service/anthropic's parsers: Anthropic's conversation (`system` and user and
// assistant turns made of content blocks) in the chat form the templates render.
#include <vector>

#include "service/api/chat_request.h"
#include "service/api/json_reader.h"

namespace tern::service::anthropic {

namespace json = api::json;

// `system`, a string or text blocks, as one system message; nothing for an empty one.
api::json::Check read_system(const api::json::element& value,
                             std::vector<api::ChatMessage>& messages);

// `messages`, appended. In an assistant turn, text blocks become its content, thinking blocks
// its reasoning_content and tool_use blocks its tool_calls (OpenAI-shaped, as templates expect).
// In a user turn, each tool_result becomes a tool message and the text around them user
// messages, in their order; a tool_result must answer a tool_use of an earlier turn. Images and
// documents are refused: tern has no vision.
api::json::Check read_messages(const api::json::element& value,
                               std::vector<api::ChatMessage>& messages);

}  // namespace tern::service::anthropic
