#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/expected.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/token_vocabulary.h"

namespace tern::engine::grammar {

// What some tokens do from one state of the grammar, whatever its callers: xgrammar's adaptive
// token mask. Tokens read to their end inside the state's rule (and what it calls) are
// accepted, tokens that fail there are rejected, and the rest (those that return from the rule
// with bytes left) are uncertain: only they are checked against the real stack at run time.
struct TokenTable {
  bool lists_rejected = false;  // `listed` holds the rejected tokens, else the accepted ones
  std::vector<std::int32_t> listed;
  std::vector<std::int32_t> uncertain;
};

// A grammar made ready for one vocabulary: for every state that reads a byte, a table per band
// of token lengths (TokenVocabulary::Band). A band's table is shared by the states that no
// string of the band's length tells apart (the k-th and the k+1-th character of a long string,
// say); the last band's tables are per state. Built off the engine thread, once per (grammar,
// vocabulary); immutable after, shared by its matchers.
class TokenizedGrammar {
 public:
  // Fails when the vocabulary cannot write any sentence of the grammar, or, with
  // kCompileTimedOut, when the check and the tables are not done by `until`.
  static Expected<std::shared_ptr<const TokenizedGrammar>> create(
      std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
      std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max());

  struct BandTables {
    std::vector<TokenTable> tables;
    std::vector<std::int32_t> table_of;  // per state; -1 for states that read no byte
  };

  const std::shared_ptr<const Grammar>& grammar() const { return grammar_; }
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }
  // A rejected list is relative to the band's mask.
  const TokenTable& table(std::size_t band, StateId state) const {
    const BandTables& tables = bands_[band];
    return tables
        .tables[static_cast<std::size_t>(tables.table_of[static_cast<std::size_t>(state)])];
  }
  std::size_t table_count() const;

  TokenizedGrammar(std::shared_ptr<const Grammar> grammar,
                   std::shared_ptr<const TokenVocabulary> vocabulary,
                   std::array<BandTables, TokenVocabulary::kBands> bands);

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::array<BandTables, TokenVocabulary::kBands> bands_;
};

}  // namespace tern::engine::grammar
