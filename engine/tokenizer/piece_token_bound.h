#pragma once

// A lower bound on the tokens a pre-tokenized piece encodes to, read from its bytes alone, so an
// encode with a token limit can refuse a long piece without running BPE over it.
//
// Every byte the model surely turns into part of a token (nothing dropped, not fused into one
// unknown token with its neighbours) is "counted", and no token stands for more counted bytes
// than the longest token's text has bytes (for byte-level vocabularies, characters): a piece with
// k counted bytes takes at least k / longest tokens.
#include <array>
#include <cstddef>
#include <string_view>

namespace tern::engine {

struct TokenizerParts;

class PieceTokenBound {
 public:
  explicit PieceTokenBound(const TokenizerParts& parts);

  // At least this many tokens encode `piece`; 0 when nothing in it is sure.
  std::size_t at_least(std::string_view piece) const;

 private:
  std::size_t longest_token_ = 4;  // in piece bytes; an unknown character is up to 4
  bool every_byte_counted_ = false;
  std::array<bool, 256> counted_{};  // per byte value, when not every byte is
};

}  // namespace tern::engine
