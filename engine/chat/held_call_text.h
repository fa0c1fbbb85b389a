#pragma once

// The two steps every marker-delimited tool parser (hermes, mistral, deepseek_v3) takes on the
// text it holds: giving out content up to the next call's opening marker, and giving back a
// broken call's text, up to its closing marker, as content.
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include "engine/chat/marker_scanner.h"
#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

// Appends `held`'s content to out.content up to the first of `open_markers` and erases it from
// `held`, skipping leading whitespace first while `skip_space_after_call` is set (it clears once
// other text shows up). On a match the marker now begins `held`.
MarkerMatch take_content(std::string& held, bool& skip_space_after_call,
                         std::initializer_list<std::string_view> open_markers, ParsedOutput& out);

// A broken call: once `close_marker` has come, the text up to and including it goes to
// out.content and is erased, and this returns true; until then `scan` moves on past what was
// searched and this returns false.
bool release_broken_call(std::string& held, std::size_t& scan, std::string_view close_marker,
                         ParsedOutput& out);

}  // namespace tern::engine::chat
