#pragma once

// String formats of the JSON Schema front end, written so that every string they produce passes
// ajv-formats in its "full" mode (the validator users check outputs with). Where ajv-formats'
// language is large (e-mail addresses, URIs), the grammar writes a plain part of it.
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/grammar/json_schema_syntax.h"

namespace tern::engine::grammar {

enum class FormatKind {
  unknown,  // not an ajv-formats format: constrains nothing
  string,   // constrains strings (add_string_format writes it)
  number,   // int32, int64, float, double: constrain numbers only
};

FormatKind format_kind(std::string_view name);

// The text between the quotes of a string in the string format `name`, of min_length to
// max_length characters (max may be kUnbounded). nullopt when the format's grammar cannot be
// fitted within those lengths.
std::optional<ExprId> add_string_format(JsonSyntax& syntax, std::string_view name,
                                        std::int32_t min_length, std::int32_t max_length);

}  // namespace tern::engine::grammar
