#include "engine/chat/marker_scanner.h"

#include <cstring>

namespace tern::engine::chat {

bool is_marker_prefix(std::string_view text, std::string_view marker) {
  return text.size() < marker.size() && marker.substr(0, text.size()) == text;
}

MarkerMatch find_marker(std::string_view text, std::size_t from,
                        std::initializer_list<std::string_view> markers) {
  // Markers are few and short; jumping between their first bytes keeps the scan linear.
  char first_bytes[8] = {};
  std::size_t first_count = 0;
  for (std::string_view marker : markers) {
    if (marker.empty() || first_count == sizeof(first_bytes) - 1) continue;
    if (std::memchr(first_bytes, marker[0], first_count) == nullptr) {
      first_bytes[first_count++] = marker[0];
    }
  }
  const std::string_view starts(first_bytes, first_count);
  for (std::size_t position = text.find_first_of(starts, from); position != std::string_view::npos;
       position = text.find_first_of(starts, position + 1)) {
    const std::string_view rest = text.substr(position);
    std::size_t index = 0;
    for (std::string_view marker : markers) {
      if (!marker.empty() && rest.starts_with(marker)) return {position, index};
      ++index;
    }
    for (std::string_view marker : markers) {
      if (is_marker_prefix(rest, marker)) return {position, MarkerMatch::none};
    }
  }
  return {text.size(), MarkerMatch::none};
}

std::size_t skip_space(std::string_view text, std::size_t from) {
  while (from < text.size() && is_space(text[from])) ++from;
  return from;
}

std::string_view trim_space(std::string_view text) {
  const std::size_t begin = skip_space(text, 0);
  std::size_t end = text.size();
  while (end > begin && is_space(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

}  // namespace tern::engine::chat
