#pragma once

#include <memory>
#include <string_view>

#include "engine/expected.h"
#include "engine/grammar/compile_deadline.h"
#include "engine/grammar/grammar.h"

namespace tern::engine::grammar {

// What tool_choice "required" (OpenAI, Responses), "any" (Anthropic) or a named tool asks: the
// output is one tool call (or, with parallel calls, several) in the model's own call format,
// each naming a tool of `tools_json` (OpenAI's tools array) and with arguments valid for that
// tool's parameters schema. `only_tool`, when not empty, is the one tool allowed. `parser` names
// the format, as the tool parsers do: hermes (<tool_call>{"name", "arguments"}</tool_call>) and
// llama3_json ({"name", "parameters"}, calls separated by "; "). Formats whose markers are
// special tokens (mistral's [TOOL_CALLS], DeepSeek's) cannot be written by a grammar over text
// and are refused. Errors name the tool (tools[i].function.parameters) and the schema's pointer.
Expected<std::shared_ptr<const Grammar>> compile_tool_calls(std::string_view tools_json,
                                                            std::string_view only_tool,
                                                            std::string_view parser,
                                                            bool parallel_calls,
                                                            CompileDeadline deadline = {});

}  // namespace tern::engine::grammar
