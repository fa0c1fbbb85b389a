#pragma once

// tokenizer.json decoders, split in two so decoding can stream: per-token steps turn one token's
// text into the bytes it contributes, and whole-output steps (lossy UTF-8, stripping leading
// spaces after a Fuse) run in TextAssembler over the concatenation.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tern::engine {

struct DecoderStep {
  enum class Kind { kByteLevel, kByteFallback, kReplace, kStrip };
  Kind kind = Kind::kReplace;
  std::string pattern;              // kReplace
  std::string content;              // kReplace: the replacement; kStrip: the character stripped
  std::size_t start = 0, stop = 0;  // kStrip
};

class Decoder {
 public:
  void add_token_step(DecoderStep step) { steps_.push_back(std::move(step)); }
  // Up to `count` spaces are dropped from the start of the whole output.
  void set_strip_leading_spaces(std::size_t count) { strip_leading_spaces_ = count; }
  std::size_t strip_leading_spaces() const { return strip_leading_spaces_; }

  // Appends the bytes that a token with this text contributes.
  void append_token(std::string_view text, std::string& out) const;

 private:
  std::vector<DecoderStep> steps_;
  std::size_t strip_leading_spaces_ = 0;
};

}  // namespace tern::engine
