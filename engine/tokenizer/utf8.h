#pragma once

// UTF-8 helpers shared by the tokenizer. Invalid input is never an error here: it decodes to
// U+FFFD by "maximal subparts", the rule Rust's String::from_utf8_lossy and Python's
// errors="replace" follow, so our text matches what the reference tokenizers saw.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tern::engine {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

struct Utf8Step {
  char32_t code_point;   // kReplacementCharacter when !valid
  std::uint32_t length;  // bytes consumed, at least 1
  bool valid;
  bool truncated;  // invalid only because the input ended inside a sequence that was valid so far
};

// Decodes the sequence at text[pos]; pos must be < text.size().
Utf8Step next_utf8(std::string_view text, std::size_t pos);

void append_utf8(std::string& out, char32_t code_point);

bool is_valid_utf8(std::string_view text);

// Replaces each maximal invalid subpart with U+FFFD; returns text unchanged when it is valid.
std::string sanitize_utf8(std::string_view text);

}  // namespace tern::engine
