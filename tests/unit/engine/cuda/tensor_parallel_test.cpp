// Tensor parallelism on emulated devices: N ranks, each a CudaBackend holding its slice of the
// model on its own device and thread, give the logits of one device and of the CPU backend within
// a stated tolerance (the all-reduces sum the ranks' partial products in another order), the
// same bits on every run, and a failing rank fails the step at once. The reference's greedy ids at
// 2 and 4 ranks: SharedModels/CliCudaReference.*_tensor_parallel_*
// (tests/integration/cli_test.cpp).

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/backend/cuda/tensor_parallel_backend.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/cuda/cpu_reference.h"

namespace tern::engine {
namespace {

constexpr std::int32_t kBlockSize = 16;
constexpr std::int32_t kMaxContext = 64;
constexpr std::int32_t kBlocksPerSequence = kMaxContext / kBlockSize;

BackendSpec tensor_parallel_spec(int ranks, std::int32_t max_context = kMaxContext) {
  BackendSpec spec;
  spec.kind = BackendKind::cuda_emulated;
  spec.emulated.devices = 4;
  spec.emulated.memory_bytes = 256ull << 20;
  for (int rank = 0; rank < ranks; ++rank) spec.devices.push_back(rank);
  spec.options = {.max_sequences = 4, .max_batch_tokens = 32, .max_context = max_context};
  return spec;
}

// Two sequences' prompts (7 and 5 tokens) in one step, then three decode steps of both.
std::vector<BatchPlan> prompt_then_decodes(std::int32_t vocab) {
  std::vector<BatchPlan> plans;
  const std::int32_t lengths[] = {7, 5};
  std::int32_t next[] = {0, 0};
  for (int step = 0; step < 4; ++step) {
    BatchPlan plan;
    for (int s = 0; s < 2; ++s) {
      SequenceChunk chunk;
      chunk.token_begin = plan.num_tokens();
      chunk.token_count = step == 0 ? lengths[s] : 1;
      chunk.first_position = next[s];
      chunk.block_table_begin = static_cast<std::int32_t>(plan.block_tables.size());
      chunk.block_count = kBlocksPerSequence;
      chunk.wants_logits = true;
      for (std::int32_t b = 0; b < kBlocksPerSequence; ++b) {
        plan.block_tables.push_back(s * kBlocksPerSequence + b);
      }
      for (std::int32_t i = 0; i < chunk.token_count; ++i) {
        plan.token_ids.push_back((s * 389 + (next[s] + i) * 97 + 11) % vocab);
        plan.positions.push_back(next[s] + i);
      }
      next[s] += chunk.token_count;
      plan.sequences.push_back(chunk);
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

class TensorParallel : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    TERN_REQUIRE_SHARED(path, GetParam());
    auto weights = load_model(path.string());
    ASSERT_TRUE(weights.ok()) << weights.error().message;
    weights_.emplace(std::move(*weights));
  }

  // Every step's logits rows, concatenated; 0 ranks is the CPU backend.
  std::vector<float> run_plans(int ranks) {
    std::unique_ptr<Backend> backend;
    if (ranks == 0) {
      backend = cpu_backend(*weights_, tensor_parallel_spec(1).options, pool_);
    } else {
      auto created = create_backend(tensor_parallel_spec(ranks), *weights_, pool_);
      EXPECT_TRUE(created.ok()) << created.error().message;
      if (created) backend = std::move(*created);
    }
    if (!backend) return {};
    const Status allocated =
        backend->allocate_kv_cache({KvCacheType::f16, kBlockSize, 2 * kBlocksPerSequence});
    EXPECT_TRUE(allocated.ok()) << allocated.message();
    const auto vocab = static_cast<std::size_t>(backend->vocab_size());
    std::vector<float> all;
    for (const BatchPlan& plan : prompt_then_decodes(backend->vocab_size())) {
      std::vector<float> logits(2 * vocab);
      const Status ran = backend->forward(plan, logits);
      EXPECT_TRUE(ran.ok()) << ran.message();
      all.insert(all.end(), logits.begin(), logits.end());
      if (ranks > 1) expect_ranks_hold_the_same_hidden_states(*backend);
    }
    return all;
  }

  // After the last all-reduce every rank's residual stream has the same bits.
  static void expect_ranks_hold_the_same_hidden_states(Backend& backend) {
    auto& group = dynamic_cast<cuda::TensorParallelBackend&>(backend);
    auto first = group.rank(0).hidden_states();
    ASSERT_TRUE(first.ok()) << first.error().message;
    ASSERT_FALSE(first->empty());
    for (int r = 1; r < group.ranks(); ++r) {
      auto other = group.rank(r).hidden_states();
      ASSERT_TRUE(other.ok()) << other.error().message;
      EXPECT_EQ(std::memcmp(first->data(), other->data(), first->size() * sizeof(float)), 0)
          << "rank " << r << " holds other hidden states than rank 0";
    }
  }

  std::optional<ModelWeights> weights_;
  kernels::ThreadPool pool_{1};
};

// Also: after every step all ranks hold bit-identical hidden states, and one device and every
// split stay within the CUDA tolerance of the CPU backend (a split that went wrong the same way
// on every rank count would still differ from it).
TEST_P(TensorParallel, LogitsStayWithinToleranceOfOneDeviceAndRepeatBitForBit) {
  const std::vector<float> cpu = run_plans(0);
  const std::vector<float> one = run_plans(1);
  ASSERT_FALSE(one.empty());
  expect_near_cpu(one, cpu, "1 rank");
  for (const int ranks : {2, 4}) {
    if (std::string(GetParam()).find("qwen3") != std::string::npos && ranks == 4) continue;
    const std::vector<float> split = run_plans(ranks);
    ASSERT_EQ(split.size(), one.size());
    double largest = 0;
    double worst = 0;
    for (std::size_t i = 0; i < one.size(); ++i) {
      largest = std::max(largest, std::abs(static_cast<double>(one[i])));
      worst = std::max(worst, std::abs(static_cast<double>(split[i]) - one[i]));
    }
    // The ranks' partial products are summed in another order than one device's dot products:
    // float rounding of logits of magnitude ~10-30.
    EXPECT_LT(worst, 1e-3) << ranks << " ranks";
    const float from_cpu = expect_near_cpu(split, cpu, std::to_string(ranks) + " ranks");
    std::printf(
        "%s: %d ranks: largest |logit| %.2f, largest difference from 1 rank %.3g, from "
        "the CPU backend %.3g\n",
        GetParam(), ranks, largest, worst, static_cast<double>(from_cpu));
    // A deterministic reduction: the same bits again.
    EXPECT_EQ(split, run_plans(ranks)) << ranks << " ranks";
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, TensorParallel,
                         ::testing::Values("models/tinystories-656k-f32.gguf",
                                           "models/random-qwen3-tiny"));

class TensorParallelTinyStories : public ::testing::Test {
 protected:
  void SetUp() override {
    TERN_REQUIRE_SHARED(path, "models/tinystories-656k-f32.gguf");
    auto weights = load_model(path.string());
    ASSERT_TRUE(weights.ok()) << weights.error().message;
    weights_.emplace(std::move(*weights));
  }

  std::optional<ModelWeights> weights_;
  kernels::ThreadPool pool_{1};
};

// A rank that fails mid-group fails the step at once (its peers are released from their
// collectives), and the group refuses every later step rather than running with a rank gone.
TEST_F(TensorParallelTinyStories, AFailingRankFailsTheStepWithoutHanging) {
  auto backend = create_backend(tensor_parallel_spec(2), *weights_, pool_);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  auto& group = dynamic_cast<cuda::TensorParallelBackend&>(**backend);
  ASSERT_TRUE(group.allocate_kv_cache({KvCacheType::f16, kBlockSize, 8}).ok());
  const std::vector<BatchPlan> plans = prompt_then_decodes(group.vocab_size());
  std::vector<float> logits(2 * static_cast<std::size_t>(group.vocab_size()));
  ASSERT_TRUE(group.forward(plans[0], logits).ok());
  group.inject_failure(1, "injected failure");
  const auto start = std::chrono::steady_clock::now();
  const Status failed = group.forward(plans[1], logits);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.message(), "rank 1: injected failure");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  const Status later = group.forward(plans[1], logits);
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.message(),
            "the tensor-parallel group failed earlier and must be reloaded: rank 1: injected "
            "failure");
}

TEST_F(TensorParallelTinyStories, AModelThatCannotBeSplitNamesTheNumbers) {
  auto backend = create_backend(tensor_parallel_spec(3), *weights_, pool_);
  ASSERT_FALSE(backend.ok());
  const std::string& message = backend.error().message;
  EXPECT_NE(message.find("8"), std::string::npos) << message;
  EXPECT_NE(message.find("3"), std::string::npos) << message;
  std::printf("%s\n", message.c_str());
}

}  // namespace
}  // namespace tern::engine
