#pragma once

// Byte-pair encoding of one pre-tokenized piece: start from one symbol per character (or per
// byte, for byte-level vocabularies), then repeatedly apply the lowest-ranked merge, leftmost
// first, as tokenizers' BPE and llama.cpp's llm_tokenizer_bpe both do.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/merge_table.h"
#include "engine/tokenizer/vocab.h"

namespace tern::engine {

struct BpeOptions {
  bool byte_level = false;     // pieces are raw bytes, spelled in the GPT-2 byte alphabet
  bool byte_fallback = false;  // a character missing from the vocab becomes its <0xXX> tokens
  bool fuse_unk = false;       // consecutive unknown characters become one unk token
  bool ignore_merges = false;  // a piece that is a whole token is taken as is
  std::optional<std::int32_t> unk_id;
};

// Per-call working memory, reused across the pieces of one encode() call.
struct BpeScratch {
  struct Symbol {
    std::int32_t id;
    std::int32_t prev;
    std::int32_t next;
  };
  struct Candidate {
    std::int32_t rank;
    std::int32_t left;
    std::int32_t right;
    std::int32_t left_id;
    std::int32_t right_id;
    std::int32_t merged_id;
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::string spelled;
};

class BpeModel {
 public:
  BpeModel(const Vocab& vocab, MergeTable merges, BpeOptions options);

  void encode(const Vocab& vocab, std::string_view piece, BpeScratch& scratch,
              std::vector<std::int32_t>& out) const;
  const BpeOptions& options() const { return options_; }

 private:
  void add_initial_symbols(const Vocab& vocab, std::string_view piece, BpeScratch& scratch) const;
  void push_symbol(BpeScratch& scratch, std::int32_t id, bool unknown, bool& last_unknown) const;

  MergeTable merges_;
  BpeOptions options_;
  std::int32_t byte_level_ids_[256];  // byte -> id of its byte-level character, or -1
};

}  // namespace tern::engine
