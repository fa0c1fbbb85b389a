#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/grammar/token_mask.h"

namespace tern::engine {
class Tokenizer;
}

namespace tern::engine::grammar {

// A vocabulary as a constrained decoder reads it: the bytes each token spells, sorted so that
// tokens sharing a prefix sit together (a trie walked in order), and the tokens that end the
// output. Built once per tokenizer; immutable after.
class TokenVocabulary {
 public:
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
  // The tokens with bytes, in byte order, and for each the length it shares with the previous.
  std::span<const std::int32_t> sorted() const { return sorted_; }
  // The bytes of sorted()[i], stored in sorted order so that walking the trie reads memory in
  // order.
  std::string_view sorted_bytes(std::size_t i) const {
    return std::string_view(sorted_bytes_)
        .substr(sorted_offsets_[i], sorted_offsets_[i + 1] - sorted_offsets_[i]);
  }
  std::span<const std::int32_t> shared_prefix() const { return shared_prefix_; }
  // The sorted index past the last token whose first byte is that of sorted()[i].
  std::size_t first_byte_group_end(std::size_t i) const {
    return group_end_[static_cast<std::uint8_t>(sorted_bytes_[sorted_offsets_[i]])];
  }
  // The tokens with bytes, as a mask.
  const TokenMask& spelled() const { return spelled_; }

 private:
  std::int32_t size_ = 0;
  std::string bytes_;
  std::vector<std::size_t> offsets_;
  std::vector<std::int32_t> eos_;
  std::vector<std::int32_t> sorted_;
  std::string sorted_bytes_;
  std::vector<std::size_t> sorted_offsets_;
  std::vector<std::int32_t> shared_prefix_;
  TokenMask spelled_;
  std::array<std::size_t, 256> group_end_{};
};

}  // namespace tern::engine::grammar
