// Decode steps replayed from CUDA graphs against the same steps launched eagerly and against the
// CPU backend: the batch size walks up through every bucket and back down, sequences leave and
// join, and each replay's logits are bit-identical to the eager step's (so no value that changes
// from step to step is frozen into a graph, and no step replays another bucket's graph) and
// within the CUDA tolerance of the CPU's.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cudart_device_runtime.h"
#include "engine/backend/cuda/decode_graphs.h"
#include "engine/backend/cuda/emulated_device_runtime.h"
#include "engine/backend/cuda/tensor_parallel_backend.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/cuda_test_backend_kind.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/cuda/cpu_reference.h"

namespace tern::engine {
namespace {

constexpr std::int32_t kMaxSequences = 12;
constexpr std::int32_t kSequenceIds = 16;  // more than fit in a step: some wait, some join late
constexpr std::int32_t kMaxContext = 96;
// Batch sizes 1, 2, ..., 12, then 11, ..., 1: every bucket (1, 2, 4, 8, 12) from below and from
// above, and the sizes between buckets, whose graphs replay with inert rows. Starting at the
// smallest matters: a backend that kept replaying its first graph computes fewer rows than later
// steps need, which a walk starting at the largest bucket would never show.
constexpr int kDecodeSteps = 2 * kMaxSequences - 1;

BackendOptions options() {
  return {.max_sequences = kMaxSequences, .max_batch_tokens = 64, .max_context = kMaxContext};
}

KvCacheSpec kv_spec(std::int32_t block_size) {
  return {KvCacheType::f16, block_size, kSequenceIds * (kMaxContext / block_size)};
}

struct Part {
  int sequence;
  std::int32_t first;
  std::int32_t count;
  bool wants_logits;
};

BatchPlan make_plan(std::span<const Part> parts, std::int32_t block_size, std::int32_t vocab) {
  const std::int32_t blocks_per_sequence = kMaxContext / block_size;
  BatchPlan plan;
  for (const Part& part : parts) {
    SequenceChunk chunk;
    chunk.token_begin = plan.num_tokens();
    chunk.token_count = part.count;
    chunk.first_position = part.first;
    chunk.block_table_begin = static_cast<std::int32_t>(plan.block_tables.size());
    chunk.block_count = blocks_per_sequence;
    for (std::int32_t b = 0; b < blocks_per_sequence; ++b) {
      plan.block_tables.push_back(part.sequence * blocks_per_sequence + b);
    }
    chunk.wants_logits = part.wants_logits;
    for (std::int32_t i = 0; i < part.count; ++i) {
      plan.token_ids.push_back((part.sequence * 389 + (part.first + i) * 97 + 11) % vocab);
      plan.positions.push_back(part.first + i);
    }
    plan.sequences.push_back(chunk);
  }
  return plan;
}

// The batch size of decode step `step` (from 0): up from 1 to kMaxSequences, then back down.
int walk_size(int step) {
  return step < kMaxSequences ? step + 1 : 2 * kMaxSequences - 1 - step;
}

// A prefill of four sequences, then kDecodeSteps decode steps of walk_size() sequences in
// shuffled order: a sequence left out waits, one not yet started joins with a one-token chunk at
// position 0, and some rows want no logits.
std::vector<std::vector<Part>> steps() {
  std::mt19937 random(15);
  std::vector<std::int32_t> length(kSequenceIds, 0);
  std::vector<std::vector<Part>> all;
  all.push_back({{0, 0, 20, true}, {1, 0, 7, true}, {2, 0, 3, false}, {3, 0, 20, true}});
  for (const Part& part : all.front()) length[static_cast<std::size_t>(part.sequence)] = part.count;
  for (int step = 0; step < kDecodeSteps; ++step) {
    const int size = walk_size(step);
    std::vector<int> ids(kSequenceIds);
    for (int s = 0; s < kSequenceIds; ++s) ids[static_cast<std::size_t>(s)] = s;
    std::ranges::shuffle(ids, random);
    std::vector<Part> parts;
    for (int i = 0; i < size; ++i) {
      const int s = ids[static_cast<std::size_t>(i)];
      std::int32_t& at = length[static_cast<std::size_t>(s)];
      parts.push_back({s, at, 1, random() % 5 != 0});
      ++at;
    }
    all.push_back(std::move(parts));
  }
  return all;
}

// The first `count` steps of steps() on `backend`: each step's logits.
std::vector<std::vector<float>> run(Backend& backend, std::int32_t block_size, int count) {
  std::vector<std::vector<float>> trace;
  const std::int32_t vocab = backend.vocab_size();
  const std::vector<std::vector<Part>> all = steps();
  for (const std::vector<Part>& parts : std::span(all).first(static_cast<std::size_t>(count))) {
    const BatchPlan plan = make_plan(parts, block_size, vocab);
    std::vector<float> logits(static_cast<std::size_t>(plan.num_logit_rows()) *
                              static_cast<std::size_t>(vocab));
    const Status ran = backend.forward(plan, logits);
    EXPECT_TRUE(ran.ok()) << ran.message();
    trace.push_back(std::move(logits));
  }
  return trace;
}

// Each step's replay equals the eager step bit for bit, and both are within the CUDA tolerance of
// the CPU backend's step; a failure names the step and its batch size.
void expect_replays_equal_eager_steps(const std::vector<std::vector<float>>& graphs,
                                      const std::vector<std::vector<float>>& eager,
                                      const std::vector<std::vector<float>>& cpu) {
  ASSERT_EQ(graphs.size(), eager.size());
  ASSERT_EQ(cpu.size(), eager.size());
  const std::vector<std::vector<Part>> all = steps();
  float largest = 0;
  for (std::size_t step = 0; step < eager.size(); ++step) {
    const std::string what =
        "step " + std::to_string(step) + " (" +
        (step == 0 ? std::string("the prefill")
                   : "a decode of " + std::to_string(all[step].size()) + " sequences") +
        ")";
    ASSERT_EQ(graphs[step].size(), eager[step].size()) << what;
    for (std::size_t i = 0; i < eager[step].size(); ++i) {
      ASSERT_EQ(std::memcmp(&graphs[step][i], &eager[step][i], sizeof(float)), 0)
          << what << " logit " << i << ": graph " << graphs[step][i] << ", eager "
          << eager[step][i];
    }
    largest = std::max(largest, expect_near_cpu(eager[step], cpu[step], what));
  }
  std::printf("largest difference from the CPU backend over %zu steps: %.3g\n", eager.size(),
              static_cast<double>(largest));
}

class CudaGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
    kind_ = kind;
    TERN_REQUIRE_SHARED(model_path, "models/tinystories-656k-f32.gguf");
    auto weights = load_model(model_path.string());
    ASSERT_TRUE(weights.ok()) << weights.error().message;
    weights_.emplace(std::move(*weights));
  }

  // Device 0 of the machine TERN_TEST_CUDA_BACKEND names: the emulated one, or the GPU.
  std::unique_ptr<cuda::DeviceRuntime> runtime() {
    if (kind_ != BackendKind::cuda) return cuda::make_emulated_device_runtime({});
    auto made = cuda::make_cuda_device_runtime(0);
    EXPECT_TRUE(made.ok()) << made.error().message;
    return made ? std::move(*made) : nullptr;
  }

  std::unique_ptr<cuda::CudaBackend> backend(bool cuda_graphs) {
    auto device = runtime();
    if (!device) return nullptr;
    auto created = cuda::CudaBackend::create(std::move(device), 0, *weights_, options(),
                                             CudaOptions{.cuda_graphs = cuda_graphs});
    EXPECT_TRUE(created.ok()) << created.error().message;
    return created ? std::move(*created) : nullptr;
  }

  // The CPU backend's logits for the first `count` steps.
  std::vector<std::vector<float>> cpu_trace(std::int32_t block_size, int count) {
    auto cpu = cpu_backend(*weights_, options(), pool_);
    if (!cpu) return {};
    EXPECT_TRUE(cpu->allocate_kv_cache(kv_spec(block_size)).ok());
    return run(*cpu, block_size, count);
  }

  BackendKind kind_ = BackendKind::cuda_emulated;
  std::optional<ModelWeights> weights_;
  kernels::ThreadPool pool_{1};
};

TEST(DecodeGraphBuckets, ArePowersOfTwoToEightThenEveryEightUpToTheLargestBatch) {
  EXPECT_EQ(cuda::DecodeGraphs::bucket_sizes(1), (std::vector<int>{1}));
  EXPECT_EQ(cuda::DecodeGraphs::bucket_sizes(5), (std::vector<int>{1, 2, 4, 5}));
  EXPECT_EQ(cuda::DecodeGraphs::bucket_sizes(8), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(cuda::DecodeGraphs::bucket_sizes(12), (std::vector<int>{1, 2, 4, 8, 12}));
  EXPECT_EQ(cuda::DecodeGraphs::bucket_sizes(32), (std::vector<int>{1, 2, 4, 8, 16, 24, 32}));
}

TEST_F(CudaGraphs, ReplayedDecodeStepsEqualEagerOnesBitForBit) {
  auto graphs = backend(true);
  auto eager = backend(false);
  ASSERT_TRUE(graphs && eager);
  ASSERT_TRUE(graphs->allocate_kv_cache(kv_spec(16)).ok());
  ASSERT_TRUE(eager->allocate_kv_cache(kv_spec(16)).ok());
  EXPECT_EQ(graphs->decode_graph_count(), 5);  // 1, 2, 4, 8, 12
  const auto start = std::chrono::steady_clock::now();
  const auto replayed = run(*graphs, 16, kDecodeSteps + 1);
  const auto middle = std::chrono::steady_clock::now();
  const auto launched = run(*eager, 16, kDecodeSteps + 1);
  const auto end = std::chrono::steady_clock::now();
  EXPECT_EQ(graphs->decode_graph_replays(), kDecodeSteps);  // every decode step replayed a graph
  EXPECT_EQ(eager->decode_graph_replays(), 0);
  expect_replays_equal_eager_steps(replayed, launched, cpu_trace(16, kDecodeSteps + 1));
  std::printf("%d decode steps: graphs %.3f s, eager %.3f s\n", kDecodeSteps,
              std::chrono::duration<double>(middle - start).count(),
              std::chrono::duration<double>(end - middle).count());
}

// The same over two tensor-parallel ranks: each rank's graphs hold its collectives, which meet
// at every replay; graphs and eager launches give the same bits on both ranks' columns.
TEST_F(CudaGraphs, ReplayedDecodeStepsEqualEagerOnesBitForBitOverTwoRanks) {
  if (kind_ != BackendKind::cuda_emulated) {
    BackendSpec two{.kind = kind_, .devices = {0, 1}};
    if (Status available = check_backend_available(two); !available.ok()) {
      GTEST_SKIP() << "two ranks cannot run here: " << available.message();
    }
  }
  auto make = [&](bool cuda_graphs) -> std::unique_ptr<Backend> {
    BackendSpec spec{.kind = kind_, .devices = {0, 1}};
    spec.emulated.devices = 2;
    spec.options = options();
    spec.cuda.cuda_graphs = cuda_graphs;
    auto created = create_backend(spec, *weights_, pool_);
    EXPECT_TRUE(created.ok()) << created.error().message;
    return created ? std::move(*created) : nullptr;
  };
  auto graphs = make(true);
  auto eager = make(false);
  ASSERT_TRUE(graphs && eager);
  ASSERT_TRUE(graphs->allocate_kv_cache(kv_spec(16)).ok());
  ASSERT_TRUE(eager->allocate_kv_cache(kv_spec(16)).ok());
  auto& ranks = dynamic_cast<cuda::TensorParallelBackend&>(*graphs);
  EXPECT_EQ(ranks.rank(0).decode_graph_count(), 5);
  EXPECT_EQ(ranks.rank(1).decode_graph_count(), 5);
  const auto replayed = run(*graphs, 16, kDecodeSteps + 1);
  EXPECT_EQ(ranks.rank(0).decode_graph_replays(), kDecodeSteps);
  EXPECT_EQ(ranks.rank(1).decode_graph_replays(), kDecodeSteps);
  expect_replays_equal_eager_steps(replayed, run(*eager, 16, kDecodeSteps + 1),
                                   cpu_trace(16, kDecodeSteps + 1));
}

TEST_F(CudaGraphs, AreNeverCapturedWhenTurnedOff) {
  auto eager = backend(false);
  ASSERT_TRUE(eager);
  ASSERT_TRUE(eager->allocate_kv_cache(kv_spec(16)).ok());
  const BatchPlan plan = make_plan(std::vector<Part>{{0, 0, 1, true}}, 16, eager->vocab_size());
  std::vector<float> logits(static_cast<std::size_t>(eager->vocab_size()));
  ASSERT_TRUE(eager->forward(plan, logits).ok());
  ASSERT_TRUE(eager->allocate_kv_cache(kv_spec(16)).ok());
  EXPECT_EQ(eager->decode_graph_count(), 0);
  EXPECT_EQ(eager->decode_graph_captures(), 0);
}

// A new KV pool (here with another block size, which the graphs' kernel arguments hold) drops
// the graphs and captures them again over it.
TEST_F(CudaGraphs, AreRecapturedWhenTheKvCacheIsReallocated) {
  auto graphs = backend(true);
  auto eager = backend(false);
  ASSERT_TRUE(graphs && eager);
  ASSERT_TRUE(graphs->allocate_kv_cache(kv_spec(16)).ok());
  EXPECT_EQ(graphs->decode_graph_captures(), 5);
  ASSERT_TRUE(graphs->allocate_kv_cache(kv_spec(8)).ok());
  EXPECT_EQ(graphs->decode_graph_count(), 5);
  EXPECT_EQ(graphs->decode_graph_captures(), 10);
  ASSERT_TRUE(eager->allocate_kv_cache(kv_spec(8)).ok());
  // Fewer steps than above keep the emulated time down; they still take every bucket, the
  // prefill and the walk up to 12 and down to 10.
  constexpr int kSteps = 16;
  expect_replays_equal_eager_steps(run(*graphs, 8, kSteps), run(*eager, 8, kSteps),
                                   cpu_trace(8, kSteps));
  EXPECT_EQ(graphs->decode_graph_replays(), kSteps - 1);
}

}  // namespace
}  // namespace tern::engine
