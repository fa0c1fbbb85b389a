#pragma once

// Tools and tool calls as typed values. Each door reads its own shape of them once and builds
// these (OpenAI's shape, the one chat templates read); the template, the tool parsers and the
// forced-call grammar take them from the request without reading JSON text again.
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/value.h"
#include "service/api/api_error.h"
#include "service/api/json_reader.h"

namespace tern::service::api {

// A JSON element of the body as a value; a 400 naming `param` when it cannot be one.
ApiResult<engine::chat::Value> value_of(const json::element& element, std::string_view param);

// A call's arguments as templates index them (`tool_call.arguments | items`): JSON text of an
// object becomes that object, as vLLM does before rendering; other text stays a string.
engine::chat::Value parsed_arguments(std::string_view arguments_json);

// {"id", "type": "function", "function": {"name", "arguments"}}: one call as chat messages carry
// it.
engine::chat::Value function_call(std::string id, std::string name, engine::chat::Value arguments);

// OpenAI's tool_calls array as sent, with each call's arguments parsed (parsed_arguments).
engine::chat::Value with_parsed_arguments(const engine::chat::Value& calls);

// {"type": "function", "function": {"name", "description" (when given), "parameters" (when
// given)}}: one function tool in OpenAI's shape.
engine::chat::Value function_tool(std::string name, engine::chat::Value description,
                                  engine::chat::Value parameters);

// The names of the function tools of an OpenAI tools array.
std::vector<std::string> function_names(const engine::chat::Value& tools);

// Whether `tools` holds at least one tool.
bool has_tools(const engine::chat::Value& tools);

}  // namespace tern::service::api
