#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/expected.h"

namespace tern::engine {

// A copy the backend performs before the next forward pass: all of block `src`'s KV into `dst`
// (copy-on-write of a block shared after a fork).
struct BlockCopy {
  std::int32_t src = 0;
  std::int32_t dst = 0;
};

// One sequence's share of a step: a contiguous run of query tokens (a prefill chunk, or one
// decode token) that attends to everything the sequence has cached before it.
struct SequenceChunk {
  std::int32_t token_begin = 0;        // first row of this chunk in BatchPlan::token_ids
  std::int32_t token_count = 0;        // query length
  std::int32_t first_position = 0;     // position of the chunk's first token
  std::int32_t block_table_begin = 0;  // this sequence's block table in BatchPlan::block_tables
  std::int32_t block_count = 0;
  bool wants_logits = false;  // logits for the chunk's last token
};

// A ragged batch for one forward pass. Its owner reserves every vector to its capacity once
// (reserve()), and clear() keeps that capacity, so the buffers never move: a steady-state step
// allocates nothing, and a GPU backend can capture their addresses into a graph and replay it.
struct BatchPlan {
  std::vector<std::int32_t> token_ids;     // all query tokens, sequence after sequence
  std::vector<std::int32_t> positions;     // position of each query token
  std::vector<std::int32_t> block_tables;  // KV block ids, sequence after sequence
  std::vector<SequenceChunk> sequences;

  // Room for the largest plan the owner can make: `max_tokens` query tokens over
  // `max_sequences` sequences, each with at most `max_blocks_per_sequence` KV blocks.
  void reserve(std::int32_t max_tokens, std::int32_t max_sequences,
               std::int32_t max_blocks_per_sequence) {
    const auto tokens = static_cast<std::size_t>(std::max(max_tokens, 0));
    const auto rows = static_cast<std::size_t>(std::max(max_sequences, 0));
    token_ids.reserve(tokens);
    positions.reserve(tokens);
    sequences.reserve(rows);
    block_tables.reserve(rows * static_cast<std::size_t>(std::max(max_blocks_per_sequence, 0)));
  }

  void clear() {
    token_ids.clear();
    positions.clear();
    block_tables.clear();
    sequences.clear();
  }

  std::int32_t num_tokens() const { return static_cast<std::int32_t>(token_ids.size()); }

  std::int32_t num_logit_rows() const {
    std::int32_t rows = 0;
    for (const SequenceChunk& sequence : sequences) rows += sequence.wants_logits ? 1 : 0;
    return rows;
  }
};

// What one forward pass of a backend can take.
struct BatchPlanLimits {
  std::int32_t max_tokens = 0;
  std::int32_t max_logit_rows = 0;
  std::int32_t max_context = 0;
  std::int32_t vocab_size = 0;
  std::int32_t kv_block_size = 0;
  std::int32_t kv_blocks = 0;  // 0: no KV cache allocated yet
};

// Checks a plan before any kernel reads it, on any backend: sizes within the limits, chunks that
// tile the tokens in order with consecutive positions, block tables that cover each chunk's
// positions with blocks inside the pool, and a logits buffer with a row per wanted chunk.
Status validate_batch_plan(const BatchPlan& plan, const BatchPlanLimits& limits,
                           std::size_t logits_size);

}  // namespace tern::engine
