#pragma once

// Turns the byte stream of decoded tokens into text, incrementally: only whole UTF-8 characters
// leave, invalid bytes become U+FFFD (maximal subparts, as String::from_utf8_lossy), and up to N
// leading spaces of the whole output are dropped. Feeding bytes in any chunking gives the same
// text as feeding them at once, which is what makes streaming equal to decode().
#include <cstddef>
#include <string>
#include <string_view>

namespace tern::engine {

class TextAssembler {
 public:
  explicit TextAssembler(std::size_t strip_leading_spaces) : strip_left_(strip_leading_spaces) {}
  // Appends the complete characters now available to out.
  void append(std::string_view bytes, std::string& out);
  // Appends whatever is still held (an unfinished sequence becomes U+FFFD).
  void finish(std::string& out);

 private:
  void emit(std::string_view character, std::string& out);
  std::string pending_;
  std::size_t strip_left_;
};

}  // namespace tern::engine
