#pragma once

#include <string>
#include <string_view>

namespace tern::loadgen {

// `text` as a JSON string literal, quotes included.
std::string json_quote(std::string_view text);

}  // namespace tern::loadgen
