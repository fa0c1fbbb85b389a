#pragma once

// Every parse of request JSON text (an API door's body, a template value, a tool list or
// schema a grammar compiles) counts here, so a test can prove that a request's JSON is parsed
// once, by its door, and flows down as typed values. One relaxed increment per parse, which
// costs nothing next to the parse.
#include <cstdint>

namespace tern::engine {

void count_json_parse();
// Parses counted in this process so far.
std::uint64_t json_parses();

}  // namespace tern::engine
