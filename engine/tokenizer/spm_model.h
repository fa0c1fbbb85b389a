#pragma once

// SentencePiece-style BPE over a scored vocabulary, as llama.cpp's llm_tokenizer_spm does it for
// GGUF "llama" vocabularies: merge the neighbouring pair whose concatenation is the
// highest-scoring token, leftmost first; characters no token covers become <0xXX> byte tokens.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace tern::engine {

struct SpmScratch {
  struct Symbol {
    std::int32_t prev;
    std::int32_t next;
    std::uint32_t offset;
    std::uint32_t length;
  };
  struct Candidate {
    float score;
    std::int32_t left;
    std::int32_t right;
    std::uint32_t length;
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

class SpmModel {
 public:
  SpmModel(const Vocab& vocab, std::optional<std::int32_t> unk_id);
  // `text` is already escaped (spaces are U+2581). Invalid UTF-8 is fine: stray bytes become
  // byte tokens. Stops at a boundary (below) once `out` holds more than `stop_above` tokens, and
  // then returns false: what it appended is the start of the whole encoding.
  bool encode(const Vocab& vocab, std::string_view text, SpmScratch& scratch,
              std::vector<std::int32_t>& out, std::size_t stop_above = SIZE_MAX) const;

 private:
  void encode_piece(const Vocab& vocab, std::string_view text, SpmScratch& scratch,
                    std::vector<std::int32_t>& out) const;

  std::optional<std::int32_t> unk_id_;
  // ASCII bytes that no multi-byte token contains. No merge can cross one, so the text splits
  // there into pieces that encode independently with the same result, and the merge queue
  // stays small enough for the cache on long texts.
  std::array<bool, 128> boundary_{};
};

}  // namespace tern::engine
