#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tern {

// simdjson says what is wrong with a malformed document but not where. These find the first
// byte that breaks the JSON grammar, so a load error can name the position: they run only after
// a parse has failed, never on the fast path.
std::optional<std::size_t> find_json_syntax_error(std::string_view text);

// "MESSAGE at line L, column C" (1-based; the column counts bytes), or MESSAGE alone when the
// grammar holds and the fault lies elsewhere (depth, numbers out of range, invalid UTF-8).
std::string describe_json_error(std::string_view text, std::string_view message);

}  // namespace tern
