#pragma once

// Which output parsers a chat request's answer goes through, and the special tokens the engine
// must then write for them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/served_model.h"
#include "service/api/chat_request.h"
#include "service/parsing_generation_stream.h"

namespace tern::service {

// The model's configured parsers (tool_parser, reasoning_parser), else those its chat template
// implies. Tool calls are parsed only when the request offers tools and tool_choice is not
// "none". `prompt` is the rendered prompt: one that ends in `<think>` starts in reasoning.
OutputParserSpec output_parsers_for(const engine::ServedModel& model,
                                    const api::ChatRequest& request, std::string_view prompt);
// The same with the parsers already named (vLLM's names, or empty for none): what the request
// adds to them.
OutputParserSpec output_parsers_for(const api::ChatRequest& request, std::string tool_parser,
                                    std::string reasoning_parser, std::string_view prompt);

// The spec's markers that are single special tokens of `tokenizer`, sorted.
std::vector<std::int32_t> parser_marker_tokens(const engine::Tokenizer& tokenizer,
                                               const OutputParserSpec& spec);

// The request's reasoning budget in the engine's terms; inactive without a reasoning parser,
// without a budget (unless the answer is `constrained`: then the engine must know where the
// reasoning ends, and the budget has no cap), or where the markers are not single tokens.
engine::ReasoningBudget reasoning_budget_for(const engine::Tokenizer& tokenizer,
                                             const OutputParserSpec& spec,
                                             std::optional<int> budget_tokens,
                                             bool constrained = false);

}  // namespace tern::service
