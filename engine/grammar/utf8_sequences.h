#pragma once

#include <cstdint>
#include <vector>

namespace tern::engine::grammar {

// One byte range per position of a UTF-8 encoding.
struct Utf8ByteRange {
  std::uint8_t first = 0;
  std::uint8_t last = 0;
};
using Utf8Sequence = std::vector<Utf8ByteRange>;

// The UTF-8 spellings of the code points in [first, last] (surrogates left out) as byte-range
// sequences: each sequence matches exactly a sub-range of code points whose encodings share a
// length, and together they match exactly the range.
std::vector<Utf8Sequence> utf8_sequences(char32_t first, char32_t last);

}  // namespace tern::engine::grammar
