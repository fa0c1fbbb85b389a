#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/sorted_tokens.h"
#include "engine/grammar/token_mask.h"

namespace tern::engine {
class Tokenizer;
}

namespace tern::engine::grammar {

// A vocabulary as a constrained decoder reads it: the bytes each token spells, sorted into
// tries, and the tokens that end the output. Built once per tokenizer; immutable after.
class TokenVocabulary {
 public:
  // Tokens in bands by length: band b holds tokens of up to kBandBytes[b] bytes (and more than
  // the band before), the last band the rest. States that no string of a band's length tells
  // apart share that band's table: the 5th and 50th character of a long string differ only
  // for tokens longer than 5 bytes. Qwen3's bands hold 32%, 46%, 21%, 1.1% and 0.2% of its
  // tokens.
  static constexpr std::array<std::size_t, 4> kBandBytes{4, 8, 16, 32};
  static constexpr std::size_t kBands = kBandBytes.size() + 1;
  struct Band {
    SortedTokens tokens;
    TokenMask mask;
    std::size_t max_bytes = 0;  // 0: no limit (the last band)
  };

  // `size` may exceed the tokenizer's vocabulary (a padded logits row): the rest never match.
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(const Tokenizer& tokenizer,
                                                               std::int32_t size,
                                                               std::span<const std::int32_t> eos);
  // Token i spells tokens[i]; an empty spelling (special tokens) never matches.
  TokenVocabulary(std::vector<std::string> tokens, std::vector<std::int32_t> eos);

  std::int32_t size() const { return size_; }
  std::span<const std::int32_t> eos_tokens() const { return eos_; }
  bool is_eos(std::int32_t token) const;
  std::string_view bytes(std::int32_t token) const {
    const auto i = static_cast<std::size_t>(token);
    return std::string_view(bytes_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  // The tokens with bytes (never an end-of-sequence token), by length.
  const std::array<Band, kBands>& bands() const { return bands_; }
  std::size_t spelled_count() const;

 private:
  std::int32_t size_ = 0;
  std::string bytes_;
  std::vector<std::size_t> offsets_;
  std::vector<std::int32_t> eos_;
  std::array<Band, kBands> bands_;
};

}  // namespace tern::engine::grammar
