#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/expected.h"
#include "engine/grammar/grammar_spec.h"
#include "engine/grammar/tokenized_grammar.h"

namespace tern::engine::grammar {

// One model's compiled grammars, by what was asked: a schema sent again (the usual case for an
// application) costs a lookup. Compiles on the caller's thread (the service's preparation pool,
// never the engine's) within a time limit. Thread-safe.
class GrammarCache {
 public:
  GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary,
               std::chrono::milliseconds compile_timeout, std::size_t capacity = 256);
  // The vocabulary made by `make_vocabulary` when the first grammar is asked for: a model whose
  // requests never constrain their output never pays for it.
  GrammarCache(std::function<std::shared_ptr<const TokenVocabulary>()> make_vocabulary,
               std::chrono::milliseconds compile_timeout, std::size_t capacity = 256);

  Expected<std::shared_ptr<const TokenizedGrammar>> get(const GrammarSpec& spec);

  struct Stats {
    std::int64_t hits = 0;
    std::int64_t compiled = 0;
    std::int64_t failed = 0;
  };
  Stats stats() const;

 private:
  Expected<std::shared_ptr<const TokenizedGrammar>> compile_within_timeout(const GrammarSpec& spec);
  const std::shared_ptr<const TokenVocabulary>& vocabulary();

  std::function<std::shared_ptr<const TokenVocabulary>()> make_vocabulary_;
  std::once_flag vocabulary_made_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::chrono::milliseconds compile_timeout_;
  std::size_t capacity_;
  mutable std::mutex mutex_;
  // Most recently used first.
  std::list<std::pair<std::string, std::shared_ptr<const TokenizedGrammar>>> entries_;
  std::unordered_map<std::string, decltype(entries_)::iterator> index_;
  Stats stats_;
};

}  // namespace tern::engine::grammar
