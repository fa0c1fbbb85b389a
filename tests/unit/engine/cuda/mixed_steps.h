#pragma once

// The plans the CUDA backend's tests run on both backends: prefill chunks, decode steps and a
// copy-on-write fork, mixed in one batch, over a block table listed out of order.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/backend_factory.h"
#include "engine/batch_plan.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::engine::mixed_steps {

constexpr std::int32_t kBlockSize = 16;
constexpr std::int32_t kMaxContext = 64;
constexpr std::int32_t kBlocksPerSequence = kMaxContext / kBlockSize;
constexpr std::int32_t kBlocks = 4 * kBlocksPerSequence;

inline BackendSpec spec_of(BackendKind kind) {
  BackendSpec spec;
  spec.kind = kind;
  spec.options = {.max_sequences = 4, .max_batch_tokens = 32, .max_context = kMaxContext};
  return spec;
}

// A model and its CPU backend beside the CUDA backend of `kind`, both with spec_of's options;
// `error` says what failed to load or to be created, and is empty when all are there.
struct SideBySide {
  SideBySide(const std::string& model, BackendKind kind) {
    auto loaded = load_model(model);
    if (!loaded.ok()) {
      error = model + ": " + loaded.error().message;
      return;
    }
    weights = std::make_unique<ModelWeights>(std::move(*loaded));
    for (auto [backend, backend_kind] :
         {std::pair{&cpu, BackendKind::cpu}, std::pair{&cuda, kind}}) {
      auto created = create_backend(spec_of(backend_kind), *weights, pool);
      if (!created.ok()) {
        error = model + ": " + created.error().message;
        return;
      }
      *backend = std::move(*created);
    }
  }

  kernels::ThreadPool pool{1};  // first, so it outlives the backends
  std::unique_ptr<ModelWeights> weights;
  std::unique_ptr<Backend> cpu;
  std::unique_ptr<Backend> cuda;
  std::string error;
};

// One sequence's part of a step: `count` tokens from `first`, logits wanted or not.
struct Part {
  int sequence;
  std::int32_t first;
  std::int32_t count;
  bool wants_logits;
};

// Token ids that depend only on (sequence, position), so both backends see the same tokens.
inline std::int32_t token_at(int sequence, std::int32_t position, std::int32_t vocab) {
  return (sequence * 389 + position * 97 + 11) % vocab;
}

inline BatchPlan make_plan(std::span<const Part> parts, std::int32_t vocab) {
  BatchPlan plan;
  for (const Part& part : parts) {
    SequenceChunk chunk;
    chunk.token_begin = plan.num_tokens();
    chunk.token_count = part.count;
    chunk.first_position = part.first;
    // Sequence 2 is a fork of sequence 0 (its blocks copied from 0's); sequences have their own
    // rows of blocks, the second block of each row listed first to exercise the block table.
    chunk.block_table_begin = static_cast<std::int32_t>(plan.block_tables.size());
    chunk.block_count = kBlocksPerSequence;
    for (std::int32_t b = 0; b < kBlocksPerSequence; ++b) {
      plan.block_tables.push_back(part.sequence * kBlocksPerSequence + (b ^ 1));
    }
    chunk.wants_logits = part.wants_logits;
    const int token_sequence = part.sequence == 2 ? 0 : part.sequence;
    for (std::int32_t i = 0; i < part.count; ++i) {
      plan.token_ids.push_back(token_at(token_sequence, part.first + i, vocab));
      plan.positions.push_back(part.first + i);
    }
    plan.sequences.push_back(chunk);
  }
  return plan;
}

struct Step {
  std::vector<Part> parts;
  std::vector<BlockCopy> copies_before;
};

// Prefill of 5 then 4 tokens for sequence 0 (the first chunk wants no logits), a 12-token
// prefill (GEMM) for sequence 1 next to it, then decode steps (GEMV, decode attention), a fork of
// sequence 0 into sequence 2 by block copies, and a step mixing a prefill chunk with decodes.
inline std::vector<Step> steps() {
  std::vector<Step> all;
  all.push_back({{{0, 0, 5, false}, {1, 0, 12, true}}, {}});
  all.push_back({{{0, 5, 4, true}, {1, 12, 1, true}}, {}});
  all.push_back({{{0, 9, 1, true}, {1, 13, 1, true}}, {}});
  std::vector<BlockCopy> fork;
  for (std::int32_t b = 0; b < kBlocksPerSequence; ++b) {
    fork.push_back({b, 2 * kBlocksPerSequence + b});
  }
  all.push_back({{{2, 10, 1, true}, {0, 10, 1, true}, {1, 14, 1, true}}, fork});
  all.push_back({{{1, 15, 7, true}, {2, 11, 1, true}, {0, 11, 1, true}}, {}});
  return all;
}

// Allocates `backend`'s KV cache, then runs every step of steps() on it (its block copies first),
// handing each step's logits, rows back to back, to `each(logits)`.
template <class Each>
void run_steps(Backend& backend, Each&& each) {
  const std::int32_t vocab = backend.vocab_size();
  EXPECT_TRUE(backend.allocate_kv_cache({KvCacheType::f16, kBlockSize, kBlocks}).ok());
  for (const Step& step : steps()) {
    if (!step.copies_before.empty()) {
      const Status copied = backend.copy_kv_blocks(step.copies_before);
      EXPECT_TRUE(copied.ok()) << copied.message();
    }
    const BatchPlan plan = make_plan(step.parts, vocab);
    std::vector<float> logits(static_cast<std::size_t>(plan.num_logit_rows()) *
                              static_cast<std::size_t>(vocab));
    const Status ran = backend.forward(plan, logits);
    EXPECT_TRUE(ran.ok()) << backend.name() << ": " << ran.message();
    each(std::move(logits));
  }
}

}  // namespace tern::engine::mixed_steps
