// The CUDA backend's summary of each logits row (forward_with_candidates) against the whole
// rows it computes: the candidates are the rows' best logits in the host's order, log-sum-exp
// and top-p's normaliser are the host sampler's within the kernel's stated bound, whole rows
// come back only where asked, and fetch_logit_rows gives the others afterwards. The whole rows
// and log-sum-exps are also held against the CPU backend's, so that a fault the rows and their
// summary share (both wrong alike) still shows.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/logit_row_normalisers.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/cuda_test_backend_kind.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/cuda/cpu_reference.h"

namespace tern::engine {
namespace {

constexpr std::int32_t kBlockSize = 16;

// Three sequences' prompts of 5, 3 and 7 tokens, each with its own block, all wanting logits.
BatchPlan three_prompts(std::int32_t vocab) {
  BatchPlan plan;
  const std::int32_t lengths[] = {5, 3, 7};
  for (std::int32_t s = 0; s < 3; ++s) {
    SequenceChunk chunk;
    chunk.token_begin = plan.num_tokens();
    chunk.token_count = lengths[s];
    chunk.first_position = 0;
    chunk.block_table_begin = static_cast<std::int32_t>(plan.block_tables.size());
    chunk.block_count = 1;
    chunk.wants_logits = true;
    plan.block_tables.push_back(s);
    for (std::int32_t i = 0; i < lengths[s]; ++i) {
      plan.token_ids.push_back((s * 389 + i * 97 + 11) % vocab);
      plan.positions.push_back(i);
    }
    plan.sequences.push_back(chunk);
  }
  return plan;
}

// Over 1, 2 and 4 tensor-parallel ranks: with several, each rank's candidates of its slice of
// the vocabulary are merged and its parts of the sums added on the host (TensorParallelBackend).
class CudaLogitCandidates : public ::testing::TestWithParam<int> {};

TEST_P(CudaLogitCandidates, RowsSummariseAsTheHostWouldAndComeBackWholeOnlyWhenAsked) {
  TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
  const int ranks = GetParam();
  TERN_REQUIRE_SHARED(path, "models/tinystories-656k-f32.gguf");
  auto weights = load_model(path.string());
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  kernels::ThreadPool pool(1);
  BackendSpec spec;
  spec.kind = kind;
  spec.options = {.max_sequences = 4, .max_batch_tokens = 32, .max_context = 64};
  spec.tensor_parallel = ranks;
  spec.emulated.devices = ranks;
  if (Status available = check_backend_available(spec); !available.ok()) {
    GTEST_SKIP() << ranks << " ranks cannot run here: " << available.message();
  }
  auto made = create_backend(spec, *weights, pool);
  ASSERT_TRUE(made.ok()) << made.error().message;
  Backend& backend = **made;
  ASSERT_TRUE(backend.allocate_kv_cache({KvCacheType::f16, kBlockSize, 8}).ok());
  const std::int32_t vocab = backend.vocab_size();
  const auto row_size = static_cast<std::size_t>(vocab);
  const std::int32_t count = backend.logit_candidate_count();
  ASSERT_EQ(count, 64);
  const BatchPlan plan = three_prompts(vocab);

  std::vector<float> whole(3 * row_size);
  ASSERT_TRUE(backend.forward(plan, whole).ok());
  std::vector<float> cpu_rows(3 * row_size);
  {
    auto cpu = cpu_backend(*weights, spec.options, pool);
    ASSERT_TRUE(cpu);
    ASSERT_TRUE(cpu->allocate_kv_cache({KvCacheType::f16, kBlockSize, 8}).ok());
    ASSERT_TRUE(cpu->forward(plan, cpu_rows).ok());
  }
  expect_near_cpu(whole, cpu_rows, std::to_string(ranks) + " ranks, whole rows");
  // The same plan again (its KV positions are rewritten with the same values).
  const std::vector<LogitRowRequest> rows = {{true, 1 / 0.7f}, {false, 0}, {false, 1 / 1.3f}};
  const float sentinel = -12345.0f;
  std::vector<float> logits(3 * row_size, sentinel);
  std::vector<float> values(3 * 64);
  std::vector<std::int32_t> ids(3 * 64);
  std::vector<float> log_sum_exp(3);
  std::vector<double> scaled_mass(3);
  LogitCandidateRows candidates{values, ids, log_sum_exp, scaled_mass, 0};
  ASSERT_TRUE(backend.forward_with_candidates(plan, rows, logits, candidates).ok());
  EXPECT_GT(candidates.scaled_mass_relative_error, 0);
  EXPECT_LT(candidates.scaled_mass_relative_error, 1e-6);

  for (std::size_t r = 0; r < 3; ++r) {
    const std::span<const float> row =
        std::span<const float>(whole).subspan(r * row_size, row_size);
    const std::span<const float> got =
        std::span<const float>(logits).subspan(r * row_size, row_size);
    if (rows[r].full_row) {
      EXPECT_TRUE(std::equal(row.begin(), row.end(), got.begin())) << "row " << r;
    } else {
      EXPECT_TRUE(std::all_of(got.begin(), got.end(), [&](float x) { return x == sentinel; }))
          << "row " << r << " came back whole unasked";
    }
    std::vector<std::int32_t> order(row_size);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
      return row[static_cast<std::size_t>(a)] > row[static_cast<std::size_t>(b)];
    });
    for (std::size_t i = 0; i < 64; ++i) {
      ASSERT_EQ(ids[r * 64 + i], order[i]) << "row " << r << " candidate " << i;
      ASSERT_EQ(values[r * 64 + i], row[static_cast<std::size_t>(order[i])]);
    }
    const float expected_lse = engine::log_sum_exp(row);
    EXPECT_NEAR(log_sum_exp[r], expected_lse, std::abs(expected_lse) * 2e-7f) << "row " << r;
    const float cpu_lse =
        engine::log_sum_exp(std::span<const float>(cpu_rows).subspan(r * row_size, row_size));
    EXPECT_NEAR(log_sum_exp[r], cpu_lse, kCudaLogitTolerance) << "row " << r;
    if (rows[r].inverse_temperature > 0) {
      const double expected = engine::scaled_mass(row, rows[r].inverse_temperature);
      EXPECT_LE(std::abs(scaled_mass[r] - expected) / expected,
                candidates.scaled_mass_relative_error)
          << "row " << r;
    } else {
      EXPECT_TRUE(std::isnan(scaled_mass[r])) << "row " << r;
    }
  }

  // The rows left on the device, fetched after the fact; a row the pass did not make is an error.
  const std::vector<std::int32_t> fetch = {2, 1};
  ASSERT_TRUE(backend.fetch_logit_rows(fetch, logits).ok());
  EXPECT_EQ(logits, whole);
  if (ranks == 1) {  // (a group takes a bad row as a failed rank: tensor_parallel_test.cpp)
    const std::vector<std::int32_t> beyond = {3};
    const Status refused = backend.fetch_logit_rows(beyond, logits);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.message(), "fetch_logit_rows: row 3 of the last pass's 3 (room for 3)");
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CudaLogitCandidates, ::testing::Values(1, 2, 4));

}  // namespace
}  // namespace tern::engine
