#pragma once

// JSON in and out of template values: contexts arrive as JSON, and the `tojson` filter writes
// what Python's json.dumps(ensure_ascii=False) writes (", " and ": " separators, keys in
// insertion order, non-ASCII characters as they are), which transformers and @huggingface/jinja
// both produce.
#include <string>
#include <string_view>

#include <simdjson.h>

#include "engine/chat/value.h"
#include "engine/expected.h"

namespace tern::engine::chat {

// A parsed JSON element as a value: integers that fit int64 stay ints, other numbers are floats.
Expected<Value> from_json(simdjson::dom::element element);
Expected<Value> parse_json_value(std::string_view json_text);

// indent < 0: one line; otherwise newlines and `indent` spaces per level, as json.dumps(indent=).
Expected<std::string> to_json(const Value& value, int indent = -1);

}  // namespace tern::engine::chat
