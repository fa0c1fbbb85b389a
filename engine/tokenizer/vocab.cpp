#include "engine/tokenizer/vocab.h"

namespace tern::engine {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::optional<std::uint8_t> parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  const int high = hex_value(text[3]), low = hex_value(text[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return static_cast<std::uint8_t>(high * 16 + low);
}

Vocab::Vocab(std::vector<VocabEntry> entries) {
  std::size_t total = 0;
  for (const auto& entry : entries) total += entry.text.size();
  arena_ = std::make_unique<char[]>(total + 1);
  std::size_t offset = 0;
  texts_.reserve(entries.size());
  kinds_.reserve(entries.size());
  scores_.reserve(entries.size());
  special_.reserve(entries.size());
  ids_.reserve(entries.size());
  for (auto& slot : byte_tokens_) slot = -1;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& entry = entries[i];
    entry.text.copy(arena_.get() + offset, entry.text.size());
    const std::string_view text(arena_.get() + offset, entry.text.size());
    offset += entry.text.size();
    const auto id = static_cast<std::int32_t>(i);
    texts_.push_back(text);
    kinds_.push_back(entry.kind);
    scores_.push_back(entry.score);
    special_.push_back(entry.special);
    if (entry.kind == TokenKind::kUndefined && text.empty()) continue;
    ids_.emplace(text, id);
    if (const auto byte = parse_byte_token(text); byte && byte_tokens_[*byte] < 0) {
      byte_tokens_[*byte] = id;
    }
  }
}

std::optional<std::int32_t> Vocab::find(std::string_view text) const {
  const auto it = ids_.find(text);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tern::engine
