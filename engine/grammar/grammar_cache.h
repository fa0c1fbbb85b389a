#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/expected.h"
#include "engine/grammar/grammar_spec.h"
#include "engine/grammar/tokenized_grammar.h"

namespace tern::engine::grammar {

// How a model's grammars compile.
struct CompileOptions {
  // A request's compile, waiting for a thread included, must be done in this time.
  std::chrono::milliseconds timeout{2000};
  // Compiles that run at once, each on a thread of the cache's own; more wait for one.
  std::size_t max_concurrent = 2;
  // The compile threads' nice value, set whatever they inherited: the engine's or higher, so
  // that a compile never takes the CPU from generation.
  int nice = 0;
};

// One model's compiled grammars, by what was asked: a schema sent again (the usual case for an
// application) costs a lookup. A compile runs on one of the cache's threads, at most
// CompileOptions::max_concurrent at once, never on the engine's; the caller (the service's
// preparation pool) waits for it at most the timeout. Every phase of a compile stops at the same
// deadline, so a compile given up on ends soon after and frees what it held. Thread-safe.
class GrammarCache {
 public:
  GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary, CompileOptions options,
               std::size_t capacity = 256);
  // The vocabulary made by `make_vocabulary` when the first grammar is asked for: a model whose
  // requests never constrain their output never pays for it.
  GrammarCache(std::function<std::shared_ptr<const TokenVocabulary>()> make_vocabulary,
               CompileOptions options, std::size_t capacity = 256);
  // Waits for the compiles under way, which end by their deadlines.
  ~GrammarCache();
  GrammarCache(const GrammarCache&) = delete;
  GrammarCache& operator=(const GrammarCache&) = delete;

  // The grammar, or an error: invalid_field naming the spec's field (a bad grammar, one the
  // vocabulary cannot write, or one that did not compile within the timeout), or overloaded
  // (retry_after_s) when it waited for a compile thread and did not compile within the timeout.
  Expected<std::shared_ptr<const TokenizedGrammar>> get(const GrammarSpec& spec);

  struct Stats {
    std::int64_t hits = 0;
    std::int64_t compiled = 0;
    std::int64_t failed = 0;
    std::int64_t busy = 0;              // refused as overloaded: the compile threads were busy
    std::int64_t compiles_running = 0;  // compiles under way now
    std::int64_t compiles_peak = 0;     // the most under way at once so far
  };
  Stats stats() const;

 private:
  struct Job;
  using Result = Expected<std::shared_ptr<const TokenizedGrammar>>;

  Result compile_within_timeout(const GrammarSpec& spec, const std::string& key);
  void run_compiles();
  void remember(const std::string& key, const std::shared_ptr<const TokenizedGrammar>& grammar);
  const std::shared_ptr<const TokenVocabulary>& vocabulary();

  std::function<std::shared_ptr<const TokenVocabulary>()> make_vocabulary_;
  std::once_flag vocabulary_made_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  CompileOptions options_;
  std::size_t capacity_;

  mutable std::mutex mutex_;  // the entries and the stats
  // Most recently used first.
  std::list<std::pair<std::string, std::shared_ptr<const TokenizedGrammar>>> entries_;
  std::unordered_map<std::string, decltype(entries_)::iterator> index_;
  Stats stats_;

  // The compile threads, started as needed. Never held with mutex_.
  mutable std::mutex compile_mutex_;
  std::condition_variable job_queued_;
  std::condition_variable job_done_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::thread> threads_;
  std::int64_t running_ = 0;
  std::int64_t peak_running_ = 0;
  bool stopping_ = false;
};

}  // namespace tern::engine::grammar
