#pragma once

#include <string_view>

#include "engine/grammar/grammar_spec.h"
#include "service/api/json_reader.h"

namespace tern::service::api {

// The structured-output fields every completion API shares: OpenAI's response_format, vLLM's
// structured_outputs and its older guided_* aliases, llama.cpp's grammar and json_schema.
// True when `key` is one of them (then `error` says whether it was read into `spec`). At most
// one constraint per request: a second is a 400 naming both fields.
bool read_structured_output_field(std::string_view key, const json::element& value,
                                  engine::grammar::GrammarSpec& spec, json::Check& error);

// The Responses API's text.format: {type: text | json_object | json_schema, name, schema, strict}.
json::Check read_text_format(const json::element& value, std::string_view param,
                             engine::grammar::GrammarSpec& spec);

}  // namespace tern::service::api
