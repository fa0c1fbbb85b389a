#include "engine/tokenizer/bpe_model.h"

#include <algorithm>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/utf8.h"

namespace tern::engine {

namespace {

// Min-heap order: lowest rank first, then leftmost.
bool heap_after(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
  return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
}

}  // namespace

BpeModel::BpeModel(const Vocab& vocab, MergeTable merges, BpeOptions options)
    : merges_(std::move(merges)), options_(options) {
  const auto& alphabet = ByteLevelAlphabet::instance();
  for (int byte = 0; byte < 256; ++byte) {
    byte_level_ids_[byte] =
        vocab.find(alphabet.encode(static_cast<std::uint8_t>(byte))).value_or(-1);
  }
}

void BpeModel::push_symbol(BpeScratch& scratch, std::int32_t id, bool unknown,
                           bool& last_unknown) const {
  if (unknown && options_.fuse_unk && last_unknown) return;
  last_unknown = unknown;
  const auto index = static_cast<std::int32_t>(scratch.symbols.size());
  scratch.symbols.push_back({id, index - 1, index + 1});
}

void BpeModel::add_initial_symbols(const Vocab& vocab, std::string_view piece,
                                   BpeScratch& scratch) const {
  bool last_unknown = false;
  if (options_.byte_level) {
    for (char c : piece) {
      const std::int32_t id = byte_level_ids_[static_cast<std::uint8_t>(c)];
      if (id >= 0) {
        push_symbol(scratch, id, false, last_unknown);
      } else if (options_.unk_id) {
        push_symbol(scratch, *options_.unk_id, true, last_unknown);
      }
    }
    return;
  }
  for (std::size_t pos = 0; pos < piece.size();) {
    const Utf8Step step = next_utf8(piece, pos);
    const std::string_view character = piece.substr(pos, step.length);
    pos += step.length;
    if (const auto id = vocab.find(character)) {
      push_symbol(scratch, *id, false, last_unknown);
      continue;
    }
    if (options_.byte_fallback) {
      bool all_bytes = true;
      for (char c : character)
        all_bytes = all_bytes && vocab.byte_token(static_cast<std::uint8_t>(c));
      if (all_bytes) {
        for (char c : character) {
          push_symbol(scratch, *vocab.byte_token(static_cast<std::uint8_t>(c)), false,
                      last_unknown);
        }
        continue;
      }
    }
    // Without an unk token the character is dropped, as llama.cpp does for a missing byte.
    if (options_.unk_id) push_symbol(scratch, *options_.unk_id, true, last_unknown);
  }
}

void BpeModel::encode(const Vocab& vocab, std::string_view piece, BpeScratch& scratch,
                      std::vector<std::int32_t>& out) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    std::string_view whole = piece;
    if (options_.byte_level) {
      scratch.spelled.clear();
      ByteLevelAlphabet::instance().encode_to(piece, scratch.spelled);
      whole = scratch.spelled;
    }
    if (const auto id = vocab.find(whole)) {
      out.push_back(*id);
      return;
    }
  }

  auto& symbols = scratch.symbols;
  auto& heap = scratch.heap;
  symbols.clear();
  heap.clear();
  add_initial_symbols(vocab, piece, scratch);
  if (symbols.empty()) return;
  const auto count = static_cast<std::int32_t>(symbols.size());
  symbols.back().next = -1;

  auto consider = [&](std::int32_t left) {
    if (left < 0) return;
    const std::int32_t right = symbols[static_cast<std::size_t>(left)].next;
    if (right < 0) return;
    const std::int32_t left_id = symbols[static_cast<std::size_t>(left)].id;
    const std::int32_t right_id = symbols[static_cast<std::size_t>(right)].id;
    if (const auto rule = merges_.find(left_id, right_id)) {
      heap.push_back({rule->rank, left, right, left_id, right_id, rule->merged_id});
      std::push_heap(heap.begin(), heap.end(), heap_after);
    }
  };
  for (std::int32_t i = 0; i + 1 < count; ++i) consider(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), heap_after);
    const BpeScratch::Candidate candidate = heap.back();
    heap.pop_back();
    auto& left = symbols[static_cast<std::size_t>(candidate.left)];
    // A candidate is stale once either side has merged since it was queued.
    if (left.id != candidate.left_id || left.next != candidate.right) continue;
    auto& right = symbols[static_cast<std::size_t>(candidate.right)];
    if (right.id != candidate.right_id) continue;
    left.id = candidate.merged_id;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = candidate.left;
    right.id = -1;
    right.next = -1;
    if (left.prev >= 0) consider(left.prev);
    consider(candidate.left);
  }

  for (std::int32_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
    out.push_back(symbols[static_cast<std::size_t>(i)].id);
  }
}

}  // namespace tern::engine
