#pragma once

// The token table: id <-> text, and what kind of token each id is. Texts live in one arena and
// the lookup map is keyed by string_view into it, so a lookup never allocates.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tern::engine {

// Mirrors GGUF's tokenizer.ggml.token_type values; tokenizer.json tokens map onto them too.
enum class TokenKind : std::uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct VocabEntry {
  std::string text;
  TokenKind kind = TokenKind::kNormal;
  float score = 0.0f;
  bool special = false;  // skipped by decode(skip_special) and reported by is_special()
};

class Vocab {
 public:
  Vocab() = default;
  // entries[i] is token i; an id with empty text and kUndefined kind is a gap.
  explicit Vocab(std::vector<VocabEntry> entries);
  Vocab(const Vocab&) = delete;
  Vocab& operator=(const Vocab&) = delete;
  Vocab(Vocab&&) = default;
  Vocab& operator=(Vocab&&) = default;

  std::int32_t size() const { return static_cast<std::int32_t>(texts_.size()); }
  bool contains(std::int32_t id) const { return id >= 0 && id < size(); }
  std::string_view text(std::int32_t id) const {
    return contains(id) ? texts_[static_cast<std::size_t>(id)] : std::string_view{};
  }
  TokenKind kind(std::int32_t id) const { return kinds_[static_cast<std::size_t>(id)]; }
  float score(std::int32_t id) const { return scores_[static_cast<std::size_t>(id)]; }
  bool special(std::int32_t id) const {
    return contains(id) && special_[static_cast<std::size_t>(id)];
  }

  // The lowest id with this text.
  std::optional<std::int32_t> find(std::string_view text) const;
  // The id of the SentencePiece byte token <0xXX>, when the vocab has it.
  std::optional<std::int32_t> byte_token(std::uint8_t byte) const {
    const std::int32_t id = byte_tokens_[byte];
    return id >= 0 ? std::optional<std::int32_t>(id) : std::nullopt;
  }

 private:
  // A heap block rather than a std::string: the views stay valid when the Vocab moves.
  std::unique_ptr<char[]> arena_;
  std::vector<std::string_view> texts_;
  std::vector<TokenKind> kinds_;
  std::vector<float> scores_;
  std::vector<bool> special_;
  std::unordered_map<std::string_view, std::int32_t> ids_;
  std::int32_t byte_tokens_[256] = {};
};

// "<0x41>" -> 0x41; nullopt for anything else.
std::optional<std::uint8_t> parse_byte_token(std::string_view text);

}  // namespace tern::engine
