#pragma once

// Added / special tokens found whole in the text before any normalization or BPE, leftmost and
// then longest first (tokenizers' AddedVocabulary, llama.cpp's tokenizer_st_partition).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::engine {

struct AddedToken {
  std::string content;
  std::int32_t id = -1;
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool single_word = false;  // only matches when not inside a word
};

struct TextSegment {
  std::size_t begin;
  std::size_t end;
  std::int32_t token_id;  // -1: plain text to encode
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher();
  void add(AddedToken token);
  bool empty() const { return tokens_.empty(); }
  // Cuts text into plain-text and token segments, in order; empty text segments are left out.
  void split(std::string_view text, std::vector<TextSegment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, std::int32_t>> children;
    std::int32_t token = -1;  // index into tokens_ when a token ends here
  };
  std::int32_t child(std::int32_t node, unsigned char byte) const;
  bool word_boundaries_ok(std::string_view text, std::size_t begin, std::size_t end) const;

  std::vector<AddedToken> tokens_;
  std::vector<Node> nodes_;
  std::int32_t root_children_[256];
};

}  // namespace tern::engine
