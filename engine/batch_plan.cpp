#include "engine/batch_plan.h"

#include <fmt/format.h>

namespace tern::engine {

Status validate_batch_plan(const BatchPlan& plan, const BatchPlanLimits& limits,
                           std::size_t logits_size) {
  if (limits.kv_blocks == 0) return Error{"batch plan: forward() before allocate_kv_cache()"};
  const std::int32_t tokens = plan.num_tokens();
  if (tokens <= 0 || tokens > limits.max_tokens) {
    return Error{
        fmt::format("batch plan: batch of {} tokens (limit {})", tokens, limits.max_tokens)};
  }
  if (plan.positions.size() != plan.token_ids.size()) {
    return Error{"batch plan: positions and token ids differ in length"};
  }
  if (plan.num_logit_rows() > limits.max_logit_rows ||
      static_cast<std::int64_t>(plan.sequences.size()) > tokens) {
    return Error{"batch plan: too many sequences in one batch"};
  }
  if (logits_size < static_cast<std::size_t>(plan.num_logit_rows()) *
                        static_cast<std::size_t>(limits.vocab_size)) {
    return Error{"batch plan: logits buffer too small"};
  }
  for (const std::int32_t id : plan.token_ids) {
    if (id < 0 || id >= limits.vocab_size) {
      return Error{fmt::format("batch plan: token id {} outside the vocabulary", id)};
    }
  }
  std::int32_t expected_begin = 0;
  for (const SequenceChunk& chunk : plan.sequences) {
    if (chunk.token_begin != expected_begin || chunk.token_count <= 0 ||
        chunk.token_begin + chunk.token_count > tokens) {
      return Error{"batch plan: sequence chunks must tile the token list in order"};
    }
    expected_begin += chunk.token_count;
    const std::int64_t end_position = std::int64_t{chunk.first_position} + chunk.token_count;
    if (chunk.first_position < 0 || end_position > limits.max_context) {
      return Error{fmt::format("batch plan: positions up to {} exceed the context of {}",
                               end_position, limits.max_context)};
    }
    if (chunk.block_table_begin < 0 || chunk.block_count < 0 ||
        static_cast<std::size_t>(chunk.block_table_begin) + chunk.block_count >
            plan.block_tables.size() ||
        std::int64_t{chunk.block_count} * limits.kv_block_size < end_position) {
      return Error{"batch plan: a sequence's block table does not cover its positions"};
    }
    for (std::int32_t i = 0; i < chunk.block_count; ++i) {
      const std::int32_t block = plan.block_tables[chunk.block_table_begin + i];
      if (block < 0 || block >= limits.kv_blocks) {
        return Error{
            fmt::format("batch plan: KV block {} outside the pool of {}", block, limits.kv_blocks)};
      }
    }
    for (std::int32_t i = 0; i < chunk.token_count; ++i) {
      if (plan.positions[chunk.token_begin + i] != chunk.first_position + i) {
        return Error{"batch plan: positions within a chunk must be consecutive"};
      }
    }
  }
  if (expected_begin != tokens) return Error{"batch plan: tokens outside every sequence"};
  return Status::success();
}

}  // namespace tern::engine
