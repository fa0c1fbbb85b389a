#pragma once

// Reading a tool call the model wrote as JSON, the same way for every format: the call object
// `{"name": ..., "arguments": {...}}` (Hermes, Llama 3, Mistral before v11) and the bare
// arguments object (Mistral v11, DeepSeek). A call is accepted only when all of it is valid JSON
// (UTF-8 included, since its text goes back to the client verbatim), it names one of the
// request's tools, and its arguments are an object.
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

// True when `text` (whitespace around it allowed) is exactly one valid JSON value.
bool is_valid_json(std::string_view text);

// The arguments' text, trimmed: an object as the model wrote it, or the object a JSON string
// holds (models and templates sometimes write `"arguments": "{\"x\": 1}"`). `value` is one
// JSON value; nullopt when it is not valid JSON or not such an object.
std::optional<std::string> read_tool_arguments(std::string_view value);

// One call object. `arguments_keys` name the member holding the arguments, in order of
// preference ("arguments"; Llama 3 also writes "parameters"). nullopt when the text is not a
// valid call of one of `tool_names`.
std::optional<ParsedToolCall> read_tool_call_object(
    std::string_view text, std::span<const std::string> tool_names,
    std::span<const std::string_view> arguments_keys);

bool is_known_tool(std::string_view name, std::span<const std::string> tool_names);

}  // namespace tern::engine::chat
