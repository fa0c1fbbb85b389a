#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/token_mask.h"
#include "engine/grammar/tokenized_grammar.h"

namespace tern::engine::grammar {

// Where one constrained output stands in its grammar: the set of parse stacks the bytes so far
// leave open. Advances by bytes or by tokens, tells which tokens may come next, and whether the
// output may end here. Used by one thread at a time (the engine thread).
class GrammarMatcher {
 public:
  // Bytes only: accept_bytes, can_end, must_end.
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);
  // Tokens too.
  explicit GrammarMatcher(std::shared_ptr<const TokenizedGrammar> tokenized);
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

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tern::engine::grammar
