#include "engine/tokenizer/spm_model.h"

#include <algorithm>

namespace tern::engine {

namespace {

// Max-heap order: highest score first, then leftmost.
bool heap_after(const SpmScratch::Candidate& a, const SpmScratch::Candidate& b) {
  return a.score < b.score || (a.score == b.score && a.left > b.left);
}

// llama.cpp's unicode_len_utf8: the length a lead byte announces; stray continuation bytes
// count as one.
std::uint32_t announced_length(unsigned char lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF8) return 4;
  return 1;
}

}  // namespace

SpmModel::SpmModel(const Vocab& vocab, std::optional<std::int32_t> unk_id) : unk_id_(unk_id) {
  boundary_.fill(true);
  for (std::int32_t id = 0; id < vocab.size(); ++id) {
    const std::string_view text = vocab.text(id);
    if (text.size() < 2) continue;
    for (char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte < boundary_.size()) boundary_[byte] = false;
    }
  }
}

bool SpmModel::encode(const Vocab& vocab, std::string_view text, SpmScratch& scratch,
                      std::vector<std::int32_t>& out, std::size_t stop_above) const {
  std::size_t begin = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= boundary_.size() || !boundary_[byte]) continue;
    encode_piece(vocab, text.substr(begin, i - begin), scratch, out);
    encode_piece(vocab, text.substr(i, 1), scratch, out);
    begin = i + 1;
    if (out.size() > stop_above) return false;
  }
  encode_piece(vocab, text.substr(begin), scratch, out);
  return out.size() <= stop_above;
}

void SpmModel::encode_piece(const Vocab& vocab, std::string_view text, SpmScratch& scratch,
                            std::vector<std::int32_t>& out) const {
  if (text.empty()) return;
  auto& symbols = scratch.symbols;
  auto& heap = scratch.heap;
  symbols.clear();
  heap.clear();
  for (std::size_t offset = 0; offset < text.size();) {
    const auto length = static_cast<std::uint32_t>(std::min<std::size_t>(
        announced_length(static_cast<unsigned char>(text[offset])), text.size() - offset));
    const auto index = static_cast<std::int32_t>(symbols.size());
    symbols.push_back({index - 1, index + 1, static_cast<std::uint32_t>(offset), length});
    offset += length;
  }
  symbols.back().next = -1;

  auto consider = [&](std::int32_t left, std::int32_t right) {
    if (left < 0 || right < 0) return;
    const auto& a = symbols[static_cast<std::size_t>(left)];
    const auto& b = symbols[static_cast<std::size_t>(right)];
    const std::string_view joined = text.substr(a.offset, a.length + b.length);
    const auto id = vocab.find(joined);
    if (!id) return;
    heap.push_back({vocab.score(*id), left, right, a.length + b.length});
    std::push_heap(heap.begin(), heap.end(), heap_after);
  };
  for (std::size_t i = 1; i < symbols.size(); ++i) {
    consider(static_cast<std::int32_t>(i - 1), static_cast<std::int32_t>(i));
  }

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), heap_after);
    const SpmScratch::Candidate candidate = heap.back();
    heap.pop_back();
    auto& left = symbols[static_cast<std::size_t>(candidate.left)];
    auto& right = symbols[static_cast<std::size_t>(candidate.right)];
    // Stale once either side has merged: the lengths no longer add up to the candidate's.
    if (left.length == 0 || right.length == 0 || left.length + right.length != candidate.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = candidate.left;
    consider(left.prev, candidate.left);
    consider(candidate.left, left.next);
  }

  for (std::int32_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
    const auto& symbol = symbols[static_cast<std::size_t>(i)];
    const std::string_view piece = text.substr(symbol.offset, symbol.length);
    if (const auto id = vocab.find(piece)) {
      out.push_back(*id);
      continue;
    }
    for (char c : piece) {
      if (const auto byte_id = vocab.byte_token(static_cast<std::uint8_t>(c))) {
        out.push_back(*byte_id);
      } else if (unk_id_) {
        out.push_back(*unk_id_);
      }
    }
  }
}

}  // namespace tern::engine
