#pragma once

// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available) for pre-tokenizer
// splits and regex normalizers. Subjects must be valid UTF-8: the tokenizer sanitizes input
// before any regex sees it, so matching skips PCRE2's own UTF check.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/expected.h"

namespace tern::engine {

class Regex {
 public:
  // pattern uses the Oniguruma/Rust syntax of tokenizer.json, which PCRE2 accepts as is for the
  // patterns tokenizers ship.
  static Expected<std::shared_ptr<const Regex>> compile(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Calls on_match(begin, end) for each non-overlapping match, left to right. Empty matches are
  // skipped.
  void for_each_match(std::string_view subject,
                      const std::function<void(std::size_t, std::size_t)>& on_match) const;
  // The same scan, stopped as soon as on_match returns false; then returns false. The matches
  // before the stop are those of the whole scan: the subject is never cut, so what follows the
  // stop is only read as far as the pattern's own lookahead needs.
  bool for_each_match_while(std::string_view subject,
                            const std::function<bool(std::size_t, std::size_t)>& on_match) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Handle;
  Regex(std::string pattern, std::unique_ptr<Handle> handle);
  std::string pattern_;
  std::unique_ptr<Handle> handle_;
};

// Escapes a literal string for use inside a pattern.
std::string regex_escape(std::string_view literal);

}  // namespace tern::engine
