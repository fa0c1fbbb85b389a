#include "engine/tokenizer/utf8.h"

namespace tern::engine {

namespace {

bool in_range(unsigned char byte, unsigned char low, unsigned char high) {
  return byte >= low && byte <= high;
}

}  // namespace

Utf8Step next_utf8(std::string_view text, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {lead, 1, true, false};
  std::uint32_t need = 0;
  char32_t code_point = 0;
  // The allowed range of the second byte rules out overlong forms and surrogates up front, so a
  // sequence is invalid exactly where the first unexpected byte appears.
  unsigned char second_low = 0x80, second_high = 0xBF;
  if (in_range(lead, 0xC2, 0xDF)) {
    need = 1;
    code_point = lead & 0x1F;
  } else if (in_range(lead, 0xE0, 0xEF)) {
    need = 2;
    code_point = lead & 0x0F;
    if (lead == 0xE0) second_low = 0xA0;
    if (lead == 0xED) second_high = 0x9F;
  } else if (in_range(lead, 0xF0, 0xF4)) {
    need = 3;
    code_point = lead & 0x07;
    if (lead == 0xF0) second_low = 0x90;
    if (lead == 0xF4) second_high = 0x8F;
  } else {
    return {kReplacementCharacter, 1, false, false};
  }
  std::uint32_t length = 1;
  for (std::uint32_t i = 0; i < need; ++i) {
    if (pos + length >= text.size()) return {kReplacementCharacter, length, false, true};
    const auto byte = static_cast<unsigned char>(text[pos + length]);
    const bool ok = i == 0 ? in_range(byte, second_low, second_high) : in_range(byte, 0x80, 0xBF);
    if (!ok) return {kReplacementCharacter, length, false, false};
    code_point = (code_point << 6) | (byte & 0x3F);
    ++length;
  }
  return {code_point, length, true, false};
}

void append_utf8(std::string& out, char32_t code_point) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const Utf8Step step = next_utf8(text, pos);
    if (!step.valid) return false;
    pos += step.length;
  }
  return true;
}

std::string sanitize_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  std::size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Step step = next_utf8(text, pos);
    if (step.valid) {
      out.append(text.substr(pos, step.length));
    } else {
      append_utf8(out, kReplacementCharacter);
    }
    pos += step.length;
  }
  return out;
}

}  // namespace tern::engine
