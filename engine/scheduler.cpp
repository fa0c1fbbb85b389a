#include "engine/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

namespace tern::engine {

Scheduler::Scheduler(const SchedulerOptions& options, KvCacheManager& kv_cache)
    : options_(options), kv_cache_(kv_cache) {
  const auto max_sequences = static_cast<std::size_t>(std::max(options_.max_num_seqs, 0));
  running_.reserve(max_sequences);
  output_.scheduled.reserve(max_sequences);
  // A sequence's table never holds more blocks than the cache has, whatever the context.
  std::int32_t max_blocks = kv_cache_.num_blocks();
  if (options_.max_context > 0) {
    max_blocks = std::min(max_blocks, kv_cache_.blocks_for(options_.max_context));
  }
  output_.plan.reserve(options_.max_num_batched_tokens, options_.max_num_seqs, max_blocks);
}

Status Scheduler::add(Sequence* sequence) {
  sequence->state = SequenceState::finished;  // until it is queued
  if (num_waiting() >= options_.max_waiting) {
    return Error{
        fmt::format("overloaded: {} sequences are already waiting (max_waiting)", num_waiting()),
        ErrorKind::overloaded, "", 1};
  }
  if (sequence->num_tokens() == 0) return Error{"the prompt is empty"};
  if (kv_cache_.blocks_for(sequence->num_tokens()) > usable_blocks()) {
    return Error{fmt::format("the prompt's {} tokens need more KV cache than the {} blocks of {} "
                             "tokens available",
                             sequence->num_tokens(), usable_blocks(), kv_cache_.block_size()),
                 ErrorKind::context_length, "prompt"};
  }
  sequence->state = SequenceState::waiting;
  sequence->num_computed_tokens = 0;
  waiting_.push_back(sequence);
  return Status::success();
}

const SchedulerOutput& Scheduler::schedule() {
  assert(!step_pending_ && "on_step_done() must follow a non-empty schedule()");
  output_.plan.clear();
  output_.scheduled.clear();
  output_.block_copies.clear();
  output_.preempted.clear();
  output_.out_of_memory.clear();
  std::int32_t budget = options_.max_num_batched_tokens;

  // Decodes first, one token each, so that no prefill can starve them.
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence& sequence = *running_[i];
    if (sequence.paused || sequence.num_tokens() - sequence.num_computed_tokens != 1) continue;
    // On failure it was the last one running (it or those after it were preempted): done.
    if (!reserve_decode_slot(sequence)) break;
    add_chunk(sequence, 1);
    --budget;
  }
  // Then the prefills already under way, oldest first.
  for (Sequence* sequence : running_) {
    if (budget == 0) break;
    const std::int32_t remaining = sequence->num_tokens() - sequence->num_computed_tokens;
    if (remaining < 2 || sequence->paused) continue;
    const std::int32_t chunk = std::min(remaining, budget);
    add_chunk(*sequence, chunk);
    budget -= chunk;
  }
  // Then newcomers in arrival order; none in a step that had to preempt, which would thrash.
  // Paused sequences (preempted while their consumer was behind) are stepped over.
  std::size_t head = 0;
  while (output_.preempted.empty() && budget > 0 && head < waiting_.size() &&
         num_running() < options_.max_num_seqs) {
    Sequence& sequence = *waiting_[head];
    if (sequence.paused) {
      ++head;
      continue;
    }
    if (kv_cache_.blocks_for(sequence.num_tokens()) > usable_blocks()) {
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(head));
      drop_out_of_memory(sequence);  // preempted, then outgrew the whole cache
      continue;
    }
    if (!admit(sequence, head)) break;  // nobody overtakes the head of the queue
    const std::int32_t chunk =
        std::min(sequence.num_tokens() - sequence.num_computed_tokens, budget);
    add_chunk(sequence, chunk);
    budget -= chunk;
  }
  step_pending_ = !output_.scheduled.empty();
  return output_;
}

void Scheduler::on_step_done() {
  for (std::size_t i = 0; i < output_.scheduled.size(); ++i) {
    Sequence& sequence = *output_.scheduled[i];
    if (sequence.state != SequenceState::running) continue;
    sequence.num_computed_tokens += output_.plan.sequences[i].token_count;
    kv_cache_.mark_computed(sequence.blocks, sequence.tokens, sequence.num_computed_tokens);
  }
  step_pending_ = false;
}

void Scheduler::append_token(Sequence& sequence, std::int32_t token) {
  assert(sequence.state == SequenceState::running);
  assert(sequence.num_computed_tokens == sequence.num_tokens());
  sequence.tokens.push_back(token);
}

Status Scheduler::fork(Sequence& parent, Sequence* child) {
  assert(parent.state == SequenceState::running && !step_pending_);
  if (num_running() >= options_.max_num_seqs) {
    return Error{
        fmt::format("cannot fork: max_num_seqs ({}) sequences are running", options_.max_num_seqs)};
  }
  child->tokens.assign(parent.tokens.begin(), parent.tokens.end());
  child->num_prompt_tokens = parent.num_prompt_tokens;
  child->num_computed_tokens = parent.num_computed_tokens;
  child->num_cached_prompt_tokens = parent.num_cached_prompt_tokens;
  child->num_preemptions = 0;
  kv_cache_.fork(parent.blocks, child->blocks);
  child->state = SequenceState::running;
  running_.push_back(child);
  return Status::success();
}

void Scheduler::finish(Sequence& sequence) {
  if (sequence.state == SequenceState::waiting) {
    const auto it = std::find(waiting_.begin(), waiting_.end(), &sequence);
    if (it != waiting_.end()) waiting_.erase(it);
  } else if (sequence.state == SequenceState::running) {
    const auto it = std::find(running_.begin(), running_.end(), &sequence);
    if (it != running_.end()) running_.erase(it);
  }
  kv_cache_.free(sequence.blocks);
  sequence.state = SequenceState::finished;
}

// Makes room for the sequence's newest token, preempting the most recently admitted sequences
// (possibly itself) until it fits. Returns false when the sequence itself had to go.
bool Scheduler::reserve_decode_slot(Sequence& sequence) {
  const std::int32_t needed = sequence.num_tokens() - sequence.blocks.num_tokens();
  while (!kv_cache_.append_slots(sequence.blocks, needed, output_.block_copies)) {
    const bool is_last = running_.back() == &sequence;
    if (is_last && running_.size() == 1) {
      // It holds every referenced block alone, so no amount of waiting would make it fit.
      running_.pop_back();
      drop_out_of_memory(sequence);
      return false;
    }
    preempt_last_running();
    if (is_last) return false;
  }
  return true;
}

// Moves the head of the waiting queue to running with blocks for all its known tokens, so a
// chunked prefill never stalls halfway for lack of blocks. Returns false when it must wait.
bool Scheduler::admit(Sequence& sequence, std::size_t waiting_index) {
  const auto cached =
      kv_cache_.allocate(sequence.blocks, sequence.tokens, options_.kv_watermark_blocks);
  if (!cached) return false;
  waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(waiting_index));
  sequence.num_computed_tokens = *cached;
  if (sequence.num_preemptions == 0) sequence.num_cached_prompt_tokens = *cached;
  sequence.state = SequenceState::running;
  running_.push_back(&sequence);
  return true;
}

void Scheduler::drop_out_of_memory(Sequence& sequence) {
  kv_cache_.free(sequence.blocks);
  sequence.state = SequenceState::finished;
  output_.out_of_memory.push_back(&sequence);
}

void Scheduler::preempt_last_running() {
  Sequence& victim = *running_.back();
  running_.pop_back();
  kv_cache_.free(victim.blocks);
  victim.num_computed_tokens = 0;
  victim.state = SequenceState::waiting;
  ++victim.num_preemptions;
  waiting_.push_front(&victim);
  output_.preempted.push_back(&victim);
  ++num_preempted_total_;
}

void Scheduler::add_chunk(Sequence& sequence, std::int32_t num_tokens) {
  BatchPlan& plan = output_.plan;
  const std::int32_t first = sequence.num_computed_tokens;
  const std::int32_t end = first + num_tokens;
  assert(sequence.blocks.num_tokens() >= end);
  // Only the blocks this chunk's attention reaches.
  const auto blocks =
      sequence.blocks.blocks().first(static_cast<std::size_t>(kv_cache_.blocks_for(end)));
  assert(plan.sequences.size() < plan.sequences.capacity() &&
         plan.token_ids.size() + static_cast<std::size_t>(num_tokens) <=
             plan.token_ids.capacity() &&
         plan.block_tables.size() + blocks.size() <= plan.block_tables.capacity() &&
         "a plan larger than the constructor reserved would move its buffers");
  plan.sequences.push_back({
      .token_begin = plan.num_tokens(),
      .token_count = num_tokens,
      .first_position = first,
      .block_table_begin = static_cast<std::int32_t>(plan.block_tables.size()),
      .block_count = static_cast<std::int32_t>(blocks.size()),
      .wants_logits = end == sequence.num_tokens(),
  });
  plan.token_ids.insert(plan.token_ids.end(), sequence.tokens.begin() + first,
                        sequence.tokens.begin() + end);
  for (std::int32_t position = first; position < end; ++position) {
    plan.positions.push_back(position);
  }
  plan.block_tables.insert(plan.block_tables.end(), blocks.begin(), blocks.end());
  output_.scheduled.push_back(&sequence);
}

}  // namespace tern::engine
