#include "engine/tokenizer/added_tokens.h"

namespace tern::engine {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool is_word_byte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte >= 0x80 || (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'z') ||
         (byte >= 'A' && byte <= 'Z') || byte == '_';
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher() {
  nodes_.emplace_back();
  for (auto& slot : root_children_) slot = -1;
}

std::int32_t AddedTokenMatcher::child(std::int32_t node, unsigned char byte) const {
  if (node == 0) return root_children_[byte];
  for (const auto& [edge, next] : nodes_[static_cast<std::size_t>(node)].children) {
    if (edge == byte) return next;
  }
  return -1;
}

void AddedTokenMatcher::add(AddedToken token) {
  if (token.content.empty()) return;
  std::int32_t node = 0;
  for (char c : token.content) {
    const auto byte = static_cast<unsigned char>(c);
    std::int32_t next = child(node, byte);
    if (next < 0) {
      next = static_cast<std::int32_t>(nodes_.size());
      nodes_.emplace_back();
      if (node == 0) {
        root_children_[byte] = next;
      } else {
        nodes_[static_cast<std::size_t>(node)].children.emplace_back(byte, next);
      }
    }
    node = next;
  }
  auto& slot = nodes_[static_cast<std::size_t>(node)].token;
  if (slot >= 0) return;  // the first registration of a content wins
  slot = static_cast<std::int32_t>(tokens_.size());
  tokens_.push_back(std::move(token));
}

bool AddedTokenMatcher::word_boundaries_ok(std::string_view text, std::size_t begin,
                                           std::size_t end) const {
  const bool left_ok = begin == 0 || !is_word_byte(text[begin - 1]);
  const bool right_ok = end == text.size() || !is_word_byte(text[end]);
  return left_ok && right_ok;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextSegment>& out) const {
  out.clear();
  std::size_t segment_start = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (root_children_[static_cast<unsigned char>(text[pos])] < 0) {
      ++pos;
      continue;
    }
    std::int32_t best = -1;
    std::size_t best_end = 0;
    std::int32_t node = 0;
    for (std::size_t i = pos; i < text.size(); ++i) {
      node = child(node, static_cast<unsigned char>(text[i]));
      if (node < 0) break;
      const std::int32_t token = nodes_[static_cast<std::size_t>(node)].token;
      if (token >= 0 && (!tokens_[static_cast<std::size_t>(token)].single_word ||
                         word_boundaries_ok(text, pos, i + 1))) {
        best = token;
        best_end = i + 1;
      }
    }
    if (best < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[static_cast<std::size_t>(best)];
    std::size_t match_begin = pos, match_end = best_end;
    if (token.lstrip) {
      while (match_begin > segment_start && is_space(text[match_begin - 1])) --match_begin;
    }
    if (token.rstrip) {
      while (match_end < text.size() && is_space(text[match_end])) ++match_end;
    }
    if (match_begin > segment_start) out.push_back({segment_start, match_begin, -1});
    out.push_back({match_begin, match_end, token.id});
    segment_start = pos = match_end;
  }
  if (segment_start < text.size()) out.push_back({segment_start, text.size(), -1});
}

}  // namespace tern::engine
