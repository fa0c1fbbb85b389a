// A sequence's logits are bit-identical whether it runs alone or inside a batch of 32, for
// prefill and for decode steps (the promise the engine's batch-invariance tests build on).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/backend/backend_factory.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/shared_data.h"

namespace tern::engine {
namespace {

constexpr std::int32_t kBlockSize = 16;
constexpr std::int32_t kMaxContext = 96;
constexpr std::int32_t kBlocksPerSequence = kMaxContext / kBlockSize;
constexpr int kSequences = 32;
constexpr int kDecodeSteps = 4;

// Logits after the prompt, then after each of kDecodeSteps fixed follow-up tokens.
using Trace = std::vector<std::vector<float>>;

std::vector<std::vector<std::int32_t>> make_prompts(std::int32_t vocab) {
  std::mt19937 rng(1234);
  std::vector<std::vector<std::int32_t>> prompts;
  for (int s = 0; s < kSequences; ++s) {
    std::vector<std::int32_t> prompt(static_cast<std::size_t>(1 + rng() % 40));
    for (auto& id : prompt) id = static_cast<std::int32_t>(rng() % static_cast<unsigned>(vocab));
    prompts.push_back(std::move(prompt));
  }
  return prompts;
}

// Runs `members` together: one prefill step with all prompts, then decode steps together.
std::vector<Trace> run_together(Backend& backend,
                                const std::vector<std::vector<std::int32_t>>& prompts,
                                const std::vector<int>& members) {
  const auto vocab = static_cast<std::size_t>(backend.vocab_size());
  std::vector<Trace> traces(members.size());
  std::vector<std::int32_t> lengths(members.size());
  BatchPlan plan;
  std::vector<float> logits(members.size() * vocab);
  for (int step = 0; step <= kDecodeSteps; ++step) {
    plan.clear();
    for (std::size_t m = 0; m < members.size(); ++m) {
      const int s = members[m];
      SequenceChunk chunk;
      chunk.token_begin = plan.num_tokens();
      chunk.first_position = lengths[m];
      if (step == 0) {
        plan.token_ids.insert(plan.token_ids.end(), prompts[static_cast<std::size_t>(s)].begin(),
                              prompts[static_cast<std::size_t>(s)].end());
      } else {
        plan.token_ids.push_back((s * 31 + step * 7) % backend.vocab_size());
      }
      chunk.token_count = plan.num_tokens() - chunk.token_begin;
      for (std::int32_t i = 0; i < chunk.token_count; ++i) {
        plan.positions.push_back(chunk.first_position + i);
      }
      chunk.block_table_begin = static_cast<std::int32_t>(plan.block_tables.size());
      chunk.block_count = kBlocksPerSequence;
      for (std::int32_t b = 0; b < kBlocksPerSequence; ++b) {
        plan.block_tables.push_back(static_cast<std::int32_t>(m) * kBlocksPerSequence + b);
      }
      chunk.wants_logits = true;
      plan.sequences.push_back(chunk);
      lengths[m] += chunk.token_count;
    }
    EXPECT_TRUE(backend.forward(plan, logits).ok());
    for (std::size_t m = 0; m < members.size(); ++m) {
      traces[m].emplace_back(logits.begin() + static_cast<std::ptrdiff_t>(m * vocab),
                             logits.begin() + static_cast<std::ptrdiff_t>((m + 1) * vocab));
    }
  }
  return traces;
}

class BatchInvarianceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(BatchInvarianceTest, LogitsEqualSoloRunsBitForBit) {
  TERN_REQUIRE_SHARED(model_path, GetParam());
  auto weights = load_model(model_path.string());
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  for (int threads : {1, 2}) {
    kernels::ThreadPool pool(threads);
    BackendSpec spec;
    spec.options.max_batch_tokens = kSequences * 41;
    spec.options.max_sequences = kSequences;
    spec.options.max_context = kMaxContext;
    auto backend = create_backend(spec, *weights, pool);
    ASSERT_TRUE(backend.ok()) << backend.error().message;
    ASSERT_TRUE(
        (*backend)
            ->allocate_kv_cache({KvCacheType::f16, kBlockSize, kSequences * kBlocksPerSequence})
            .ok());
    const auto prompts = make_prompts((*backend)->vocab_size());
    std::vector<int> everyone(kSequences);
    for (int s = 0; s < kSequences; ++s) everyone[static_cast<std::size_t>(s)] = s;
    const std::vector<Trace> batched = run_together(**backend, prompts, everyone);
    for (int s = 0; s < kSequences; ++s) {
      const std::vector<Trace> solo = run_together(**backend, prompts, {s});
      for (int step = 0; step <= kDecodeSteps; ++step) {
        const auto& a = batched[static_cast<std::size_t>(s)][static_cast<std::size_t>(step)];
        const auto& b = solo[0][static_cast<std::size_t>(step)];
        ASSERT_EQ(a.size(), b.size());
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
            << "sequence " << s << " step " << step << " threads " << threads;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TinyStories, BatchInvarianceTest,
                         ::testing::Values("models/tinystories-656k-f32.gguf",
                                           "models/tinystories-656k-q8_0.gguf",
                                           "models/tinystories-656k-q4_0.gguf",
                                           "models/tinystories-656k"));

}  // namespace
}  // namespace tern::engine
