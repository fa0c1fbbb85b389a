#include "engine/grammar/utf8_sequences.h"

namespace tern::engine::grammar {
namespace {

constexpr char32_t kMaxCodepoint = 0x10FFFF;
constexpr char32_t kSurrogateFirst = 0xD800;
constexpr char32_t kSurrogateLast = 0xDFFF;

int encode(char32_t c, std::uint8_t* out) {
  if (c < 0x80) {
    out[0] = static_cast<std::uint8_t>(c);
    return 1;
  }
  if (c < 0x800) {
    out[0] = static_cast<std::uint8_t>(0xC0 | (c >> 6));
    out[1] = static_cast<std::uint8_t>(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    out[0] = static_cast<std::uint8_t>(0xE0 | (c >> 12));
    out[1] = static_cast<std::uint8_t>(0x80 | ((c >> 6) & 0x3F));
    out[2] = static_cast<std::uint8_t>(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = static_cast<std::uint8_t>(0xF0 | (c >> 18));
  out[1] = static_cast<std::uint8_t>(0x80 | ((c >> 12) & 0x3F));
  out[2] = static_cast<std::uint8_t>(0x80 | ((c >> 6) & 0x3F));
  out[3] = static_cast<std::uint8_t>(0x80 | (c & 0x3F));
  return 4;
}

// Splits until the range's first and last encodings differ only in whole trailing byte ranges.
void split(char32_t first, char32_t last, std::vector<Utf8Sequence>& out) {
  for (const char32_t boundary : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}}) {
    if (first <= boundary && last > boundary) {
      split(first, boundary, out);
      split(boundary + 1, last, out);
      return;
    }
  }
  if (last < 0x80) {
    out.push_back({{static_cast<std::uint8_t>(first), static_cast<std::uint8_t>(last)}});
    return;
  }
  for (int trailing = 1; trailing < 4; ++trailing) {
    const char32_t mask = (char32_t{1} << (6 * trailing)) - 1;
    if ((first & ~mask) == (last & ~mask)) continue;
    if ((first & mask) != 0) {
      split(first, first | mask, out);
      split((first | mask) + 1, last, out);
      return;
    }
    if ((last & mask) != mask) {
      split(first, (last & ~mask) - 1, out);
      split(last & ~mask, last, out);
      return;
    }
  }
  std::uint8_t low[4];
  std::uint8_t high[4];
  const int length = encode(first, low);
  encode(last, high);
  Utf8Sequence sequence;
  for (int i = 0; i < length; ++i) sequence.push_back({low[i], high[i]});
  out.push_back(std::move(sequence));
}

}  // namespace

std::vector<Utf8Sequence> utf8_sequences(char32_t first, char32_t last) {
  std::vector<Utf8Sequence> out;
  if (last > kMaxCodepoint) last = kMaxCodepoint;
  if (first > last) return out;
  if (first < kSurrogateFirst && last > kSurrogateLast) {
    split(first, kSurrogateFirst - 1, out);
    split(kSurrogateLast + 1, last, out);
  } else if (last < kSurrogateFirst || first > kSurrogateLast) {
    split(first, last, out);
  } else if (first < kSurrogateFirst) {
    split(first, kSurrogateFirst - 1, out);
  } else if (last > kSurrogateLast) {
    split(kSurrogateLast + 1, last, out);
  }
  return out;
}

}  // namespace tern::engine::grammar
