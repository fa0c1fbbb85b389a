#pragma once

// tokenizer.json pre-tokenizers (and GGUF's per-"pre" regex lists): cut one normalized segment
// into pieces that BPE encodes independently. Pieces are views into the segment or into storage
// owned by the PieceBuffer, so splitting allocates nothing per piece.
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/regex.h"

namespace tern::engine {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

enum class PrependScheme { kAlways, kFirst, kNever };

struct PreTokenizerStep {
  enum class Kind { kSplit, kPrefixSpace, kMetaspace };
  Kind kind = Kind::kSplit;
  // kSplit
  std::shared_ptr<const Regex> regex;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  // kMetaspace
  std::string replacement = "\xE2\x96\x81";
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;
};

class PieceBuffer {
 public:
  void clear() {
    pieces_.clear();
    storage_.clear();
  }
  std::vector<std::string_view>& pieces() { return pieces_; }
  // Keeps `text` alive for as long as the buffer and returns a view of it.
  std::string_view store(std::string text) {
    storage_.push_back(std::move(text));
    return storage_.back();
  }

 private:
  std::vector<std::string_view> pieces_;
  std::deque<std::string> storage_;
};

class PreTokenizer {
 public:
  void add(PreTokenizerStep step) { steps_.push_back(std::move(step)); }
  bool empty() const { return steps_.empty(); }
  // Replaces buffer's pieces with the pieces of `segment`. `first_segment`: the segment starts
  // the input (Metaspace's "first" prepend scheme only prepends there).
  void apply(std::string_view segment, bool first_segment, PieceBuffer& buffer) const;

 private:
  std::vector<PreTokenizerStep> steps_;
};

// The GPT-2 pattern that ByteLevel's use_regex stands for.
inline constexpr const char* kGpt2SplitPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

}  // namespace tern::engine
