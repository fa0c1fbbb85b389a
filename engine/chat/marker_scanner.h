#pragma once

// Finding markers (`<tool_call>`, `</think>`, `[TOOL_CALLS]`) in text that arrives in pieces.
// A marker may be cut anywhere between two pieces, so a search that finds none also says where a
// tail begins that could still grow into one: the parser keeps that tail and emits the rest.
#include <cstddef>
#include <initializer_list>
#include <string_view>

namespace tern::engine::chat {

struct MarkerMatch {
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  // Where the marker starts; when none was found, where the held tail starts (the text's size
  // when no tail could become a marker).
  std::size_t position = 0;
  // Index of the marker found in the list searched for, or `none`.
  std::size_t marker = none;

  bool found() const { return marker != none; }
};

// The earliest of `markers` in `text` at or after `from` (where two start at the same place, the
// first listed). One pass over the text, so a caller that resumes from the returned position
// never scans a byte twice (bar a held tail).
MarkerMatch find_marker(std::string_view text, std::size_t from,
                        std::initializer_list<std::string_view> markers);

// True when `text` is a proper prefix of `marker`: it may yet become the marker.
bool is_marker_prefix(std::string_view text, std::string_view marker);

// ASCII whitespace as JSON and the chat formats use it.
inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// The first position at or after `from` that is not whitespace (text's size when none).
std::size_t skip_space(std::string_view text, std::size_t from);

std::string_view trim_space(std::string_view text);

}  // namespace tern::engine::chat
