#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/token_mask.h"
#include "engine/grammar/tokenized_grammar.h"

namespace tern::engine::grammar {

// What one matcher may cost, whatever its grammar's shape: an ambiguous grammar's parse-stack
// sets can grow exponentially with the output.
struct MatcherLimits {
  static constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

  // The work of one step (one token's mask, or the move past a token or bytes), in
  // StackAutomaton's units of about a nanosecond.
  std::uint64_t step_work = kUnlimited;
  // What the matcher's automaton holds. Past half of it after a step, it keeps only the
  // current stacks; a step that would pass all of it fails.
  std::uint64_t memory_bytes = kUnlimited;
};

// Where one constrained output stands in its grammar: the set of parse stacks the bytes so far
// leave open. Advances by bytes or by tokens, tells which tokens may come next, and whether the
// output may end here. Used by one thread at a time (the engine thread).
class GrammarMatcher {
 public:
  // Bytes only: accept_bytes, can_end, must_end.
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar, MatcherLimits limits = {});
  // Tokens too.
  explicit GrammarMatcher(std::shared_ptr<const TokenizedGrammar> tokenized,
                          MatcherLimits limits = {});
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  // Moves past `bytes` when the grammar allows all of them; false, and no move, when not.
  bool accept_bytes(std::string_view bytes);
  // Whether accept_bytes(bytes) would succeed; no move either way.
  bool can_accept_bytes(std::string_view bytes);
  // The bytes so far are a whole sentence of the grammar.
  bool can_end() const;
  // A whole sentence, and no byte may follow: only the end may come next.
  bool must_end() const;

  // Moves past a token's bytes; an end-of-sequence token is taken where can_end(), and after
  // it nothing is. False, and no move, when the grammar does not allow the token.
  bool accept_token(std::int32_t token);
  // The tokens accept_token() would take now. Valid until the next call on this matcher.
  const TokenMask& next_token_mask();
  bool ended() const;

  // A step passed the limits: the matcher gives up for good. From then on it accepts nothing
  // and its masks allow nothing; the output must end in error.
  bool over_budget() const;

  // What the matcher has cost so far, for tests and benchmarks.
  struct Usage {
    std::uint64_t peak_step_work = 0;     // the most work one step took
    std::uint64_t peak_memory_bytes = 0;  // the most its automaton held
    std::uint64_t memory_bytes = 0;       // what it holds now
    std::int64_t compactions = 0;         // times it dropped all but the current stacks
  };
  const Usage& usage() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tern::engine::grammar
