#include "engine/grammar/grammar_cache.h"

#include <future>
#include <thread>

#include <fmt/format.h>

namespace tern::engine::grammar {

GrammarCache::GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary,
                           std::chrono::milliseconds compile_timeout, std::size_t capacity)
    : vocabulary_(std::move(vocabulary)), compile_timeout_(compile_timeout), capacity_(capacity) {}

GrammarCache::GrammarCache(std::function<std::shared_ptr<const TokenVocabulary>()> make_vocabulary,
                           std::chrono::milliseconds compile_timeout, std::size_t capacity)
    : make_vocabulary_(std::move(make_vocabulary)),
      compile_timeout_(compile_timeout),
      capacity_(capacity) {}

const std::shared_ptr<const TokenVocabulary>& GrammarCache::vocabulary() {
  std::call_once(vocabulary_made_, [this] {
    if (!vocabulary_ && make_vocabulary_) vocabulary_ = make_vocabulary_();
  });
  return vocabulary_;
}

Expected<std::shared_ptr<const TokenizedGrammar>> GrammarCache::get(const GrammarSpec& spec) {
  const std::string key = spec.cache_key();
  {
    const std::lock_guard lock(mutex_);
    if (const auto found = index_.find(key); found != index_.end()) {
      entries_.splice(entries_.begin(), entries_, found->second);
      ++stats_.hits;
      return entries_.front().second;
    }
  }
  // Compiled unlocked: two requests with one new schema may both compile it, and neither
  // waits on the other's compile.
  Expected<std::shared_ptr<const TokenizedGrammar>> tokenized = compile_within_timeout(spec);
  const std::lock_guard lock(mutex_);
  if (!tokenized.ok()) {
    ++stats_.failed;
    Error error = tokenized.error();
    error.kind = ErrorKind::invalid_field;
    if (error.field.empty()) error.field = spec.field;
    if (error.message.starts_with("the grammar did not compile in time")) {
      error.message = fmt::format("{} (structured_outputs_compile_timeout_ms is {})", error.message,
                                  compile_timeout_.count());
    }
    return error;
  }
  ++stats_.compiled;
  if (index_.contains(key)) return *tokenized;
  entries_.emplace_front(key, *tokenized);
  index_.emplace(key, entries_.begin());
  if (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
  return *tokenized;
}

// On a thread of its own, waited for at most the timeout: the table walk stops itself at the
// deadline, and the front ends are bounded by their size caps, so a compile that is given up on
// still ends soon after; its result is dropped. The caller is never held past the timeout.
Expected<std::shared_ptr<const TokenizedGrammar>> GrammarCache::compile_within_timeout(
    const GrammarSpec& spec) {
  using Result = Expected<std::shared_ptr<const TokenizedGrammar>>;
  const auto deadline = std::chrono::steady_clock::now() + compile_timeout_;
  auto task = std::make_shared<std::packaged_task<Result()>>(
      [spec, vocabulary = vocabulary(), deadline]() -> Result {
        auto grammar = compile_grammar(spec);
        if (!grammar.ok()) return grammar.error();
        return TokenizedGrammar::create(*grammar, vocabulary, deadline);
      });
  std::future<Result> result = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  if (result.wait_until(deadline) != std::future_status::ready) {
    return Error{"the grammar did not compile in time", ErrorKind::invalid_field};
  }
  return result.get();
}

GrammarCache::Stats GrammarCache::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace tern::engine::grammar
