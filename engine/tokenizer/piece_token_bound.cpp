#include "engine/tokenizer/piece_token_bound.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/tokenizer_parts.h"

namespace tern::engine {
namespace {

std::size_t code_points(std::string_view text) {
  std::size_t count = 0;
  for (char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

}  // namespace

PieceTokenBound::PieceTokenBound(const TokenizerParts& parts) {
  const Vocab& vocab = parts.vocab;
  const bool byte_level = parts.bpe && parts.bpe->options().byte_level;
  // A byte-level token stands for one byte per character of its text; any other for at most its
  // text's bytes (a byte-fallback token's "<0x41>" for one byte).
  for (std::int32_t id = 0; id < vocab.size(); ++id) {
    const std::string_view text = vocab.text(id);
    longest_token_ = std::max(longest_token_, byte_level ? code_points(text) : text.size());
  }
  // Which bytes surely end up in some token, by how the model starts a piece's symbols.
  const auto& alphabet = ByteLevelAlphabet::instance();
  auto has_char_token = [&](std::uint8_t byte) {
    return vocab.find(std::string(1, static_cast<char>(byte))).has_value();
  };
  if (parts.bpe) {
    const BpeOptions& options = parts.bpe->options();
    // An unknown symbol becomes one unknown token, unless fused with the unknowns beside it.
    const bool unknowns_counted = options.unk_id.has_value() && !options.fuse_unk;
    bool all_byte_tokens = true;
    for (int value = 0; value < 256; ++value) {
      all_byte_tokens = all_byte_tokens && vocab.byte_token(static_cast<std::uint8_t>(value));
    }
    for (int value = 0; value < 256; ++value) {
      const auto byte = static_cast<std::uint8_t>(value);
      if (options.byte_level) {
        // Each byte is a symbol of its own: its byte-level token, else the unknown token.
        counted_[byte] = unknowns_counted || vocab.find(alphabet.encode(byte)).has_value();
      } else if (unknowns_counted || (options.byte_fallback && all_byte_tokens)) {
        counted_[byte] = true;
      } else if (byte < 0x80) {
        // An ASCII character is a whole character: its token, else its byte token.
        counted_[byte] =
            has_char_token(byte) || (options.byte_fallback && vocab.byte_token(byte).has_value());
      }
    }
  } else if (parts.spm) {
    // A character left unmerged and spelled by no token goes byte by byte: the byte's token,
    // else the unknown token, else nothing.
    for (int value = 0; value < 256; ++value) {
      const auto byte = static_cast<std::uint8_t>(value);
      counted_[byte] = parts.unk_id.has_value() || vocab.byte_token(byte).has_value() ||
                       (byte < 0x80 && has_char_token(byte));
    }
  }
  every_byte_counted_ = std::ranges::all_of(counted_, [](bool counted) { return counted; });
}

std::size_t PieceTokenBound::at_least(std::string_view piece) const {
  std::size_t counted = piece.size();
  if (!every_byte_counted_) {
    counted = 0;
    for (char c : piece) counted += counted_[static_cast<unsigned char>(c)];
  }
  return (counted + longest_token_ - 1) / longest_token_;
}

}  // namespace tern::engine
