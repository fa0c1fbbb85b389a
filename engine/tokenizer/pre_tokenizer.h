#pragma once

// tokenizer.json pre-tokenizers (and GGUF's per-"pre" regex lists): cut one normalized segment
// into pieces that BPE encodes independently. Pieces are handed over one at a time, in order, as
// they are found, so that an encode that has seen enough can stop without splitting the rest.
#include <functional>
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

// Receives each piece; returns false to stop the split. A piece is a view that lives only for
// the call.
using PieceSink = std::function<bool(std::string_view piece)>;

class PreTokenizer {
 public:
  void add(PreTokenizerStep step) { steps_.push_back(std::move(step)); }
  bool empty() const { return steps_.empty(); }
  // Hands `sink` the pieces of `segment`, in order: each step splits the pieces of the step
  // before it, depth first, so the first piece comes out before the rest of the segment is
  // split. `first_segment`: the segment starts the input (Metaspace's "first" prepend scheme only
  // prepends there). Returns false when the sink stopped it.
  bool for_each_piece(std::string_view segment, bool first_segment, const PieceSink& sink) const;

 private:
  // Step `step` applied to `piece`, its output going on to the next step (the sink after the
  // last). `firsts[step]` is true until the step has received its first piece.
  bool visit(std::size_t step, std::string_view piece, bool first_segment,
             std::vector<bool>& firsts, const PieceSink& sink) const;

  std::vector<PreTokenizerStep> steps_;
};

// The GPT-2 pattern that ByteLevel's use_regex stands for.
inline constexpr const char* kGpt2SplitPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

}  // namespace tern::engine
