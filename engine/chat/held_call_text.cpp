#include "engine/chat/held_call_text.h"

namespace tern::engine::chat {

MarkerMatch take_content(std::string& held, bool& skip_space_after_call,
                         std::initializer_list<std::string_view> open_markers, ParsedOutput& out) {
  const std::string_view text = held;
  std::size_t begin = 0;
  if (skip_space_after_call) {
    begin = skip_space(text, 0);
    if (begin < text.size()) skip_space_after_call = false;
  }
  const MarkerMatch match = find_marker(text, begin, open_markers);
  out.content.append(text.substr(begin, match.position - begin));
  held.erase(0, match.position);
  return match;
}

bool release_broken_call(std::string& held, std::size_t& scan, std::string_view close_marker,
                         ParsedOutput& out) {
  const MarkerMatch match = find_marker(held, scan, {close_marker});
  if (!match.found()) {
    scan = match.position;
    return false;
  }
  const std::size_t end = match.position + close_marker.size();
  out.content.append(held, 0, end);
  held.erase(0, end);
  return true;
}

}  // namespace tern::engine::chat
