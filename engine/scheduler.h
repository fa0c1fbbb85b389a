#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/batch_plan.h"
#include "engine/expected.h"
#include "engine/kv_cache.h"
#include "engine/sequence.h"

namespace tern::engine {

struct SchedulerOptions {
  std::int32_t max_num_seqs = 256;             // running at once
  std::int32_t max_num_batched_tokens = 2048;  // query tokens per step
  std::int32_t max_waiting = 4096;             // beyond this, add() reports overload
  std::int32_t kv_watermark_blocks = 0;        // kept free at admission for decodes to grow
  // The longest sequence, prompt and output, in tokens: it sizes the plan's block tables once.
  // 0 means as long as the whole KV cache.
  std::int32_t max_context = 0;
};

// One step's work. The buffers are reserved once and reused from step to step.
struct SchedulerOutput {
  BatchPlan plan;
  std::vector<Sequence*> scheduled;      // scheduled[i] owns plan.sequences[i]
  std::vector<BlockCopy> block_copies;   // copy-on-write, before the forward pass
  std::vector<Sequence*> preempted;      // KV freed, back at the front of the waiting queue
  std::vector<Sequence*> out_of_memory;  // can never fit the KV cache; already finished
};

// Continuous batching policy, model-free. Each step: decode tokens of running sequences first
// (one each, so a long prefill never starves them), then prefill chunks of running sequences,
// then new sequences first come first served, all under a token budget. When KV blocks run
// out, the most recently admitted sequence is preempted: its blocks are freed and it is
// recomputed from its tokens when readmitted.
//
// A step: schedule(), the forward pass, on_step_done(), then append_token() for each chunk
// that wanted logits, then finish() for sequences that stopped or were cancelled.
class Scheduler {
 public:
  Scheduler(const SchedulerOptions& options, KvCacheManager& kv_cache);

  // Queues a new sequence; the caller keeps it alive until finish(). Fails when the waiting
  // queue is full (overload) or when the prompt alone exceeds the KV cache.
  Status add(Sequence* sequence);

  // Picks this step's batch; the output stays valid until the next call.
  const SchedulerOutput& schedule();

  // The forward pass wrote the KV of every scheduled token.
  void on_step_done();

  // The token sampled from a chunk that wanted logits.
  void append_token(Sequence& sequence, std::int32_t token);

  // n > 1 sampling: `child` (empty) continues from `parent`'s tokens, sharing its blocks. Call
  // it after on_step_done() for a parent whose chunk wanted logits, before its append_token().
  // Fails when max_num_seqs sequences are already running.
  Status fork(Sequence& parent, Sequence* child);

  // Finished or cancelled, in any state: the sequence leaves the scheduler and its blocks go
  // back to the pool.
  void finish(Sequence& sequence);

  // Paused sequences (Sequence::paused) are skipped but keep their blocks and their place.
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  std::int32_t num_waiting() const { return static_cast<std::int32_t>(waiting_.size()); }
  std::int32_t num_running() const { return static_cast<std::int32_t>(running_.size()); }
  std::int64_t num_preempted_total() const { return num_preempted_total_; }
  std::int32_t num_last_step_tokens() const { return output_.plan.num_tokens(); }

 private:
  bool reserve_decode_slot(Sequence& sequence);
  bool admit(Sequence& sequence, std::size_t waiting_index);
  void preempt_last_running();
  void drop_out_of_memory(Sequence& sequence);
  std::int32_t usable_blocks() const {
    return kv_cache_.num_blocks() - options_.kv_watermark_blocks;
  }
  void add_chunk(Sequence& sequence, std::int32_t num_tokens);

  SchedulerOptions options_;
  KvCacheManager& kv_cache_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  // in admission order: the back is the next victim
  SchedulerOutput output_;
  bool step_pending_ = false;
  std::int64_t num_preempted_total_ = 0;
};

}  // namespace tern::engine
