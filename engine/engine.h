#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/admission.h"
#include "engine/backend/backend.h"
#include "engine/expected.h"
#include "engine/request.h"
#include "engine/scheduler.h"

namespace tern::engine {

class Tokenizer;

struct EngineOptions {
  std::int32_t context_length = 0;  // longest prompt + max_tokens; at most the backend's context
  std::vector<std::int32_t> eos_token_ids;
  std::uint64_t kv_cache_bytes = 256ull << 20;  // KV budget, divided by Backend::kv_block_bytes
  std::int32_t num_kv_blocks = 0;               // when > 0, used instead of kv_cache_bytes
  KvCacheType kv_cache_type = KvCacheType::f16;
  std::int32_t block_size = 16;
  bool enable_prefix_caching = true;
  // max_num_batched_tokens is capped at Backend::max_batch_tokens(); max_num_seqs must not
  // exceed the sequences per pass the backend was built for. scheduler.max_waiting is derived
  // from `admission`.
  SchedulerOptions scheduler;
  AdmissionLimits admission;
  std::size_t submit_queue_capacity = 1024;
  int thread_nice = 0;  // the engine thread's nice value (0: unchanged); see ThreadPool
  // The most work one token of a structured output may cost its grammar (GrammarMatcher's
  // step work); past it that request ends in error and the others go on.
  std::uint64_t grammar_step_work = kDefaultGrammarStepWork;
  // Events buffered per request, plus one per sample beyond the first (event_channel_capacity()
  // in request.h; each slot is ~140 bytes, allocated with the request). The consumer drains it
  // as tokens arrive; when it falls behind, the policy of Request decides. 64 keeps thousands of
  // open streams cheap (1024 cost ~140 KiB per stream).
  std::size_t event_channel_capacity = 64;
};

// A snapshot of the engine's counters; times are totals since start, in seconds.
struct EngineStats {
  std::int32_t waiting = 0;  // sequences submitted, not yet running (admission's bound)
  std::int32_t running = 0;
  std::int64_t preempted_total = 0;
  std::int64_t steps = 0;
  std::int32_t last_step_tokens = 0;
  std::int64_t step_tokens_total = 0;
  std::int64_t prompt_tokens_total = 0;
  std::int64_t generated_tokens_total = 0;
  std::int64_t cached_tokens_total = 0;
  std::int64_t requests_finished = 0;
  double schedule_seconds = 0;
  double forward_seconds = 0;
  double sample_seconds = 0;
  double detokenize_seconds = 0;             // includes stop checks and pushing events
  std::int64_t expert_bytes_read_total = 0;  // routed-expert weights read, over all steps
  std::int32_t kv_blocks = 0;
  std::uint64_t kv_cache_bytes = 0;      // the blocks' bytes in every layer
  std::uint64_t kv_bytes_per_token = 0;  // one token's K and V (or latent) in every layer
  std::int32_t kv_free_blocks = 0;       // including cached blocks nobody references
  double prefix_hit_rate = 0;
  // Tokens drawn from a device's candidates and from whole rows (a declined row, fetched whole,
  // counts as whole: the two add up to the tokens sampled), and rows fetched whole after their
  // candidates did not decide (Backend::logit_candidate_count()).
  std::int64_t logit_rows_from_candidates = 0;
  std::int64_t logit_rows_whole = 0;
  std::int64_t logit_rows_fetched = 0;
};

// Serves one model: a thread that loops over the scheduler's steps, running each batch on the
// backend and streaming tokens to the requests' handles. submit(), cancel() and stats() may be
// called from any thread; they never block on the engine.
class Engine {
 public:
  // `backend` and `tokenizer` (nullable: no text, no stop strings) must outlive the engine.
  // Allocates the backend's KV cache and starts the engine thread.
  static Expected<std::unique_ptr<Engine>> create(Backend& backend, const Tokenizer* tokenizer,
                                                  const EngineOptions& options);
  ~Engine();  // stop(StopMode::cancel)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues requests, all or none: together they are charged prompts x n waiting
  // sequences to `client` (an API key or an address; empty for anonymous callers). Errors have
  // a kind: invalid_field naming the field (also when a limit can never be met), context_length,
  // overloaded with a retry time when the queue cannot take them now, unavailable when stopping.
  Expected<std::vector<RequestHandle>> submit_all(std::vector<Request> requests,
                                                  std::string_view client = {});
  Expected<RequestHandle> submit(Request request, std::string_view client = {});

  // The request finishes as cancelled at the next step; unknown or finished ids are ignored.
  Status cancel(std::uint64_t request_id);

  enum class StopMode {
    drain,   // let every request in flight finish
    cancel,  // cancel them
  };
  // Refuses new requests, deals with those in flight as `mode` says, then joins the thread.
  void stop(StopMode mode = StopMode::drain);

  EngineStats stats() const;
  const RequestLimits& limits() const;
  std::int32_t num_kv_blocks() const;

 private:
  struct State;
  explicit Engine(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tern::engine
