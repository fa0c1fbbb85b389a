#pragma once

// GPT-2's byte-level alphabet: every byte maps to a printable code point, so any byte string is
// a string of visible characters that BPE vocabularies can hold ("Ġ" is the space byte).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tern::engine {

class ByteLevelAlphabet {
 public:
  static const ByteLevelAlphabet& instance();

  // The UTF-8 text of the code point standing for `byte`.
  std::string_view encode(std::uint8_t byte) const { return encoded_[byte]; }
  // The byte a code point stands for, when it is one of the 256.
  std::optional<std::uint8_t> decode(char32_t code_point) const;

  // Appends the byte-level text of `bytes` to out.
  void encode_to(std::string_view bytes, std::string& out) const;
  // Appends the bytes `text` stands for; false (out untouched) when a code point is not one of
  // the 256, so the caller can fall back to the raw text as the reference decoders do.
  bool decode_to(std::string_view text, std::string& out) const;

 private:
  ByteLevelAlphabet();
  std::array<std::string, 256> encoded_;
  std::array<std::int16_t, 324> decoded_;  // indexed by code point; every code point is < 324
};

}  // namespace tern::engine
