#pragma once

#include <string>
#include <string_view>

namespace tern {

// The one JSON string escaper: API responses, log lines, chat templates' tojson and the load
// generator all write strings through it. Escapes as Python's json.dumps(ensure_ascii=False)
// does (\" \\ \n \r \t \b \f short, other control bytes as \u00xx; non-ASCII stays UTF-8), and
// replaces each byte of a malformed UTF-8 sequence with U+FFFD, so no input can make the output
// invalid JSON. Allocates nothing beyond the output string's growth.

// Appends `text` as the body of a JSON string, without quotes.
void append_json_escaped(std::string& out, std::string_view text);

// Appends `text` as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text);

// `text` as a JSON string literal, quotes included.
std::string json_string(std::string_view text);

}  // namespace tern
