#include "engine/tokenizer/byte_level.h"

#include "engine/tokenizer/utf8.h"

namespace tern::engine {

const ByteLevelAlphabet& ByteLevelAlphabet::instance() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

ByteLevelAlphabet::ByteLevelAlphabet() {
  decoded_.fill(-1);
  // Printable Latin-1 bytes stand for themselves; the rest take code points from 256 upward.
  char32_t next = 256;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                           (byte >= 0xAE && byte <= 0xFF);
    const char32_t code_point = printable ? static_cast<char32_t>(byte) : next++;
    append_utf8(encoded_[static_cast<std::size_t>(byte)], code_point);
    decoded_[code_point] = static_cast<std::int16_t>(byte);
  }
}

std::optional<std::uint8_t> ByteLevelAlphabet::decode(char32_t code_point) const {
  if (code_point >= decoded_.size() || decoded_[code_point] < 0) return std::nullopt;
  return static_cast<std::uint8_t>(decoded_[code_point]);
}

void ByteLevelAlphabet::encode_to(std::string_view bytes, std::string& out) const {
  for (char c : bytes) out.append(encoded_[static_cast<std::uint8_t>(c)]);
}

bool ByteLevelAlphabet::decode_to(std::string_view text, std::string& out) const {
  const std::size_t start = out.size();
  for (std::size_t pos = 0; pos < text.size();) {
    const Utf8Step step = next_utf8(text, pos);
    const auto byte = step.valid ? decode(step.code_point) : std::nullopt;
    if (!byte) {
      out.resize(start);
      return false;
    }
    out.push_back(static_cast<char>(*byte));
    pos += step.length;
  }
  return true;
}

}  // namespace tern::engine
