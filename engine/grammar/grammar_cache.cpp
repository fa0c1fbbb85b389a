#include "engine/grammar/grammar_cache.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "kernels/this_thread.h"

namespace tern::engine::grammar {

// One compile asked for: queued, then run by a compile thread, which leaves the result here for
// the caller if it still waits.
struct GrammarCache::Job {
  GrammarSpec spec;
  std::string key;
  std::shared_ptr<const TokenVocabulary> vocabulary;
  std::chrono::steady_clock::time_point deadline;
  bool waited = false;  // no compile thread was free when it came
  bool started = false;
  std::optional<Result> result;
};

GrammarCache::GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary,
                           CompileOptions options, std::size_t capacity)
    : vocabulary_(std::move(vocabulary)), options_(options), capacity_(capacity) {
  options_.max_concurrent = std::max<std::size_t>(options_.max_concurrent, 1);
}

GrammarCache::GrammarCache(std::function<std::shared_ptr<const TokenVocabulary>()> make_vocabulary,
                           CompileOptions options, std::size_t capacity)
    : make_vocabulary_(std::move(make_vocabulary)), options_(options), capacity_(capacity) {
  options_.max_concurrent = std::max<std::size_t>(options_.max_concurrent, 1);
}

GrammarCache::~GrammarCache() {
  {
    const std::lock_guard lock(compile_mutex_);
    stopping_ = true;
  }
  job_queued_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

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
  Result tokenized = compile_within_timeout(spec, key);
  const std::lock_guard lock(mutex_);
  if (tokenized.ok()) {
    ++stats_.compiled;
    return tokenized;
  }
  Error error = tokenized.error();
  if (error.kind == ErrorKind::overloaded) {
    ++stats_.busy;
    return error;
  }
  ++stats_.failed;
  error.kind = ErrorKind::invalid_field;
  if (error.field.empty()) error.field = spec.field;
  if (error.message == kCompileTimedOut) {
    error.message = fmt::format("{} (structured_outputs_compile_timeout_ms is {})", error.message,
                                options_.timeout.count());
  }
  return error;
}

void GrammarCache::remember(const std::string& key,
                            const std::shared_ptr<const TokenizedGrammar>& grammar) {
  const std::lock_guard lock(mutex_);
  if (index_.contains(key)) return;
  entries_.emplace_front(key, grammar);
  index_.emplace(key, entries_.begin());
  if (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
}

// The caller waits at most the timeout, the queue included. A compile that had a thread at once
// and is not done is the grammar's fault (invalid_field, once it stops at the same deadline); one
// that waited for a thread is the load's (overloaded, and a retry may find it cached: a compile
// that ends after its caller left is still remembered).
GrammarCache::Result GrammarCache::compile_within_timeout(const GrammarSpec& spec,
                                                          const std::string& key) {
  auto job = std::make_shared<Job>();
  job->spec = spec;
  job->key = key;
  job->vocabulary = vocabulary();
  job->deadline = std::chrono::steady_clock::now() + options_.timeout;
  std::unique_lock lock(compile_mutex_);
  const auto busy = static_cast<std::size_t>(running_) + queue_.size();
  job->waited = busy >= options_.max_concurrent;
  if (busy >= threads_.size() && threads_.size() < options_.max_concurrent) {
    threads_.emplace_back([this] { run_compiles(); });
  }
  queue_.push_back(job);
  job_queued_.notify_one();
  job_done_.wait_until(lock, job->deadline, [&] { return job->result.has_value(); });
  if (job->result) return std::move(*job->result);
  if (!job->started) std::erase(queue_, job);
  if (job->waited) {
    return Error{fmt::format("the structured-output grammar waited for one of the {} compile "
                             "threads (structured_outputs_max_concurrent_compiles) and did not "
                             "compile in time",
                             options_.max_concurrent),
                 ErrorKind::overloaded, spec.field, 1};
  }
  return Error{kCompileTimedOut, ErrorKind::invalid_field};
}

void GrammarCache::run_compiles() {
  name_this_thread("tern-grammar");
  // Set even when 0: the thread inherits its creator's, which may run above the engine.
  set_this_thread_nice(options_.nice);
  std::unique_lock lock(compile_mutex_);
  for (;;) {
    job_queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    job->started = true;
    ++running_;
    peak_running_ = std::max(peak_running_, running_);
    lock.unlock();
    Result result = [&]() -> Result {
      auto grammar = compile_grammar(job->spec, CompileDeadline(job->deadline));
      if (!grammar.ok()) return grammar.error();
      return TokenizedGrammar::create(*grammar, job->vocabulary, job->deadline);
    }();
    if (result.ok()) remember(job->key, *result);
    lock.lock();
    --running_;
    job->result = std::move(result);
    job_done_.notify_all();
  }
}

GrammarCache::Stats GrammarCache::stats() const {
  Stats stats;
  {
    const std::lock_guard lock(mutex_);
    stats = stats_;
  }
  const std::lock_guard lock(compile_mutex_);
  stats.compiles_running = running_;
  stats.compiles_peak = peak_running_;
  return stats;
}

}  // namespace tern::engine::grammar
