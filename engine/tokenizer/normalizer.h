#pragma once

// tokenizer.json normalizers: each step rewrites the text of one segment (the text between
// added tokens) before pre-tokenization. Offsets are not tracked: tern never needs them.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/regex.h"

namespace tern::engine {

struct NormalizerStep {
  enum class Kind { kNfc, kLowercase, kPrepend, kReplace, kStrip };
  Kind kind = Kind::kNfc;
  std::string text;                              // kPrepend: the prefix; kReplace: the replacement
  std::string pattern;                           // kReplace with a literal pattern
  std::shared_ptr<const Regex> regex;            // kReplace with a regex pattern
  bool strip_left = false, strip_right = false;  // kStrip
};

class Normalizer {
 public:
  void add(NormalizerStep step) { steps_.push_back(std::move(step)); }
  bool empty() const { return steps_.empty(); }
  std::string apply(std::string_view text) const;

 private:
  std::vector<NormalizerStep> steps_;
};

}  // namespace tern::engine
