#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/expected.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/token_vocabulary.h"

namespace tern::engine::grammar {

// What each token does from one state of the grammar, whatever its callers: xgrammar's adaptive
// token mask. Tokens read to their end inside the state's rule (and what it calls) are
// accepted, tokens that fail there are rejected, and the rest (those that return from the rule
// with bytes left) are uncertain: only they are checked against the real stack at run time.
struct StateTokenTable {
  bool lists_rejected = false;  // `listed` holds the rejected tokens, else the accepted ones
  std::vector<std::int32_t> listed;
  std::vector<std::int32_t> uncertain;
};

// A grammar made ready for one vocabulary: a table for every state that reads a byte. Built off
// the engine thread, once per (grammar, vocabulary); immutable after, shared by its matchers.
class TokenizedGrammar {
 public:
  // Fails when the tables are not done by `deadline`: a grammar too costly for the vocabulary.
  static Expected<std::shared_ptr<const TokenizedGrammar>> create(
      std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
      std::chrono::steady_clock::time_point deadline =
          std::chrono::steady_clock::time_point::max());

  const std::shared_ptr<const Grammar>& grammar() const { return grammar_; }
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }
  const StateTokenTable& table(StateId state) const {
    return tables_[static_cast<std::size_t>(state)];
  }

  TokenizedGrammar(std::shared_ptr<const Grammar> grammar,
                   std::shared_ptr<const TokenVocabulary> vocabulary,
                   std::vector<StateTokenTable> tables);

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::vector<StateTokenTable> tables_;
};

}  // namespace tern::engine::grammar
