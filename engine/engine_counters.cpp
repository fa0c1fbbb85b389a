#include "engine/engine_counters.h"

#include "engine/engine.h"

namespace tern::engine {

void EngineCounters::record_step(const Step& step) {
  add(schedule_ns_, step.schedule_ns);
  add(forward_ns_, step.forward_ns);
  add(sample_ns_, step.sample_ns);
  add(detokenize_ns_, step.detokenize_ns);
  add(preempted_, step.preempted);
  add(expert_bytes_read_, step.expert_bytes_read);
  add(generated_tokens_, step.generated_tokens);
  add(candidate_rows_, step.candidate_rows);
  add(full_rows_, step.full_rows);
  add(fetched_rows_, step.fetched_rows);
  if (!step.forward_ok) return;
  add(steps_, 1);
  add(step_tokens_, step.tokens);
  last_step_tokens_.store(step.tokens, std::memory_order_relaxed);
}

void EngineCounters::record_delivery(std::int64_t ns) {
  add(detokenize_ns_, ns);
}

void EngineCounters::record_request_started(std::int64_t prompt_tokens) {
  add(prompt_tokens_, prompt_tokens);
}

void EngineCounters::record_request_finished(std::int64_t cached_tokens) {
  add(cached_tokens_, cached_tokens);
  add(requests_finished_, 1);
}

void EngineCounters::record_state(std::int32_t running, std::int32_t kv_free_blocks,
                                  double prefix_hit_rate) {
  running_.store(running, std::memory_order_relaxed);
  kv_free_blocks_.store(kv_free_blocks, std::memory_order_relaxed);
  prefix_hit_rate_.store(prefix_hit_rate, std::memory_order_relaxed);
}

void EngineCounters::fill(EngineStats& stats) const {
  const auto seconds = [](const std::atomic<std::int64_t>& ns) {
    return static_cast<double>(ns.load(std::memory_order_relaxed)) * 1e-9;
  };
  const auto value = [](const auto& counter) { return counter.load(std::memory_order_relaxed); };
  stats.running = value(running_);
  stats.preempted_total = value(preempted_);
  stats.steps = value(steps_);
  stats.last_step_tokens = value(last_step_tokens_);
  stats.step_tokens_total = value(step_tokens_);
  stats.prompt_tokens_total = value(prompt_tokens_);
  stats.generated_tokens_total = value(generated_tokens_);
  stats.cached_tokens_total = value(cached_tokens_);
  stats.requests_finished = value(requests_finished_);
  stats.schedule_seconds = seconds(schedule_ns_);
  stats.forward_seconds = seconds(forward_ns_);
  stats.sample_seconds = seconds(sample_ns_);
  stats.detokenize_seconds = seconds(detokenize_ns_);
  stats.expert_bytes_read_total = value(expert_bytes_read_);
  stats.kv_free_blocks = value(kv_free_blocks_);
  stats.prefix_hit_rate = value(prefix_hit_rate_);
  stats.logit_rows_from_candidates = value(candidate_rows_);
  stats.logit_rows_whole = value(full_rows_);
  stats.logit_rows_fetched = value(fetched_rows_);
}

}  // namespace tern::engine
