// tern's promise: a request's greedy output and logprobs are bit-identical whether it runs
// alone or among 31 others, with or without the prefix cache, and through preemption.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <random>

#include "tests/integration/engine/engine_harness.h"
#include "tests/integration/model/reference_data.h"
#include "tests/support/cuda_test_backend_kind.h"
#include "tests/support/shared_data.h"

namespace tern::engine::testing {
namespace {

// One backend's run of the property, sized to what that backend can afford: the emulated CUDA
// device runs every kernel on the SIMT emulator, so its case is shorter prompts, fewer tokens
// and a smaller step budget and KV cache that still chunk prefills and preempt.
struct Config {
  bool prefix_caching;
  std::int32_t kv_blocks;
};

struct Case {
  const char* name;
  BackendKind kind;  // for the CUDA path, the backend TERN_TEST_CUDA_BACKEND names runs it
  const char* model;
  std::int32_t max_tokens;      // the most of any prompt; others stop earlier
  std::size_t long_prompt_min;  // the long prompts: chunked prefill
  std::size_t long_prompt_spread;
  std::int32_t max_num_batched_tokens;  // the scheduler's step budget
  std::int32_t preempting_kv_blocks;    // a KV cache small enough to preempt
  std::int32_t context_length;          // 0: the model's; a cache must hold one whole context
  std::vector<Config> configs;
  int tensor_parallel = 1;  // ranks of the CUDA path
  const char* reference = "reference/tinystories-656k.greedy.jsonl";
};

// Varied max_tokens, so sequences finish at different steps and the batch keeps changing.
std::int32_t max_tokens_of(const Case& c, std::size_t prompt) {
  return c.max_tokens - static_cast<std::int32_t>(prompt % 3) * (c.max_tokens / 4);
}

struct Prompt {
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> reference;  // greedy ids, for the 8 reference prompts
  std::int32_t max_tokens = 0;
};

// The 8 reference prompts, then 24 of mixed lengths: some share long prefixes (prefix-cache
// hits inside the batch), some repeat a reference prompt, some are long enough to be chunked.
std::vector<Prompt> make_prompts(const std::vector<::tern::testing::GreedyReference>& references,
                                 std::int32_t vocab, const Case& c) {
  std::vector<Prompt> prompts;
  // Up to the first near tie: past it a float32 run may rightly take the other token.
  for (const auto& reference : references) {
    const auto compared = static_cast<std::ptrdiff_t>(::tern::testing::steps_to_compare(reference));
    prompts.push_back({reference.prompt_ids,
                       {reference.greedy_ids.begin(), reference.greedy_ids.begin() + compared}});
  }
  std::mt19937 rng(7);
  auto random_ids = [&](std::size_t count) {
    std::vector<std::int32_t> ids(count);
    for (auto& id : ids)
      id = static_cast<std::int32_t>(3 + rng() % static_cast<unsigned>(vocab - 3));
    return ids;
  };
  const std::vector<std::int32_t> shared_prefix = random_ids(40);
  for (int i = 0; i < 24; ++i) {
    std::vector<std::int32_t> ids;
    switch (i % 4) {
      case 0:  // a common 40-token prefix, then something of its own
        ids = shared_prefix;
        for (std::int32_t id : random_ids(1 + rng() % 20)) ids.push_back(id);
        break;
      case 1:  // a reference prompt again
        ids = references[static_cast<std::size_t>(i) % references.size()].prompt_ids;
        break;
      case 2:  // long: several chunks of prefill
        ids = random_ids(c.long_prompt_min + rng() % c.long_prompt_spread);
        break;
      default:
        ids = random_ids(1 + rng() % 30);
    }
    ids.insert(ids.begin(), 1);  // BOS
    prompts.push_back({ids, {}});
  }
  for (std::size_t p = 0; p < prompts.size(); ++p) prompts[p].max_tokens = max_tokens_of(c, p);
  return prompts;
}

Request greedy_request(const Prompt& prompt) {
  Request request;
  request.prompt_ids = prompt.ids;
  request.sampling.temperature = 0;
  request.sampling.logprobs = true;
  request.stop.max_tokens = prompt.max_tokens;
  return request;
}

std::vector<RequestOutput> run_solo(Engine& engine, const std::vector<Prompt>& prompts) {
  std::vector<RequestOutput> outputs;
  for (const Prompt& prompt : prompts) {
    auto handle = engine.submit(greedy_request(prompt));
    EXPECT_TRUE(handle.ok()) << handle.error().message;
    if (!handle) return outputs;
    outputs.push_back(collect(*handle));
  }
  return outputs;
}

std::vector<RequestOutput> run_together(Engine& engine, const std::vector<Prompt>& prompts) {
  std::vector<RequestHandle> handles;
  for (const Prompt& prompt : prompts) {
    auto handle = engine.submit(greedy_request(prompt));
    EXPECT_TRUE(handle.ok()) << handle.error().message;
    if (!handle) return {};
    handles.push_back(std::move(*handle));
  }
  std::vector<RequestOutput> outputs;
  for (RequestHandle& handle : handles) outputs.push_back(collect(handle));
  return outputs;
}

class EngineBatchInvarianceTest : public ::testing::TestWithParam<Case> {};

TEST_P(EngineBatchInvarianceTest, BatchedOutputsEqualSoloRunsAndTheReference) {
  const Case& c = GetParam();
  BackendKind kind = c.kind;
  if (is_cuda(c.kind)) {
    TERN_REQUIRE_CUDA_TEST_BACKEND(cuda_kind);
    kind = cuda_kind;
    BackendSpec ranks{.kind = kind, .tensor_parallel = c.tensor_parallel};
    ranks.emulated.devices = std::max(ranks.emulated.devices, c.tensor_parallel);
    if (Status available = check_backend_available(ranks); !available.ok()) {
      GTEST_SKIP() << c.tensor_parallel << " ranks cannot run here: " << available.message();
    }
  }
  TERN_REQUIRE_SHARED(model_path, c.model);
  TERN_REQUIRE_SHARED(reference_path, c.reference);
  auto factory = TinyEngineFactory::load(model_path.string(), kind, c.tensor_parallel);
  ASSERT_TRUE(factory);
  const auto references = ::tern::testing::read_greedy_references(reference_path);
  ASSERT_EQ(references.size(), 8u);
  const auto prompts = make_prompts(references, factory->weights().config().vocab_size, c);

  EngineOptions solo_options = factory->default_options();
  solo_options.enable_prefix_caching = false;
  solo_options.scheduler.max_num_batched_tokens = c.max_num_batched_tokens;
  if (c.context_length > 0) solo_options.context_length = c.context_length;
  Engine* engine = factory->make(solo_options);
  ASSERT_NE(engine, nullptr);
  const std::vector<RequestOutput> solo = run_solo(*engine, prompts);
  ASSERT_EQ(solo.size(), prompts.size());
  ASSERT_TRUE(wait_for_full_pool(*engine));
  const std::int64_t solo_steps = engine->stats().steps;
  for (std::size_t p = 0; p < prompts.size(); ++p) {
    if (!prompts[p].reference.empty()) {
      const std::vector<std::int32_t>& ids = solo[p].samples[0].ids;
      const auto compared =
          static_cast<std::ptrdiff_t>(std::min(ids.size(), prompts[p].reference.size()));
      EXPECT_EQ(std::vector<std::int32_t>(ids.begin(), ids.begin() + compared),
                std::vector<std::int32_t>(prompts[p].reference.begin(),
                                          prompts[p].reference.begin() + compared))
          << "reference prompt " << p;
    }
  }

  for (const Config config : c.configs) {
    SCOPED_TRACE(::testing::Message() << "prefix caching " << config.prefix_caching
                                      << ", KV blocks " << config.kv_blocks);
    EngineOptions options = factory->default_options();
    options.enable_prefix_caching = config.prefix_caching;
    options.num_kv_blocks = config.kv_blocks;
    options.scheduler.max_num_batched_tokens = c.max_num_batched_tokens;
    if (c.context_length > 0) options.context_length = c.context_length;
    engine = factory->make(options);
    ASSERT_NE(engine, nullptr);
    const std::vector<RequestOutput> together = run_together(*engine, prompts);
    ASSERT_EQ(together.size(), prompts.size());
    for (std::size_t p = 0; p < prompts.size(); ++p) {
      const SampleOutput& a = together[p].samples[0];
      const SampleOutput& b = solo[p].samples[0];
      EXPECT_LE(a.ids.size(), static_cast<std::size_t>(prompts[p].max_tokens)) << "prompt " << p;
      EXPECT_EQ(a.ids, b.ids) << "prompt " << p;
      EXPECT_EQ(a.text, b.text) << "prompt " << p;
      EXPECT_EQ(a.finish_reason, b.finish_reason) << "prompt " << p;
      // Bit-identical logprobs.
      ASSERT_EQ(a.logprobs.size(), b.logprobs.size());
      for (std::size_t i = 0; i < a.logprobs.size(); ++i) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(a.logprobs[i]),
                  std::bit_cast<std::uint32_t>(b.logprobs[i]))
            << "prompt " << p << " token " << i;
      }
    }
    EXPECT_TRUE(wait_for_full_pool(*engine));
    const EngineStats stats = engine->stats();
    if (config.kv_blocks == c.preempting_kv_blocks) {
      EXPECT_GT(stats.preempted_total, 0);
    }
    EXPECT_EQ(stats.cached_tokens_total > 0, config.prefix_caching);
    // Fewer steps than the solo runs took: sequences did share steps.
    EXPECT_LT(stats.steps, solo_steps);
    std::printf(
        "%s: prefix caching %d, %d KV blocks: %lld steps (solo %lld), %lld preempted, "
        "%lld cached tokens\n",
        c.name, config.prefix_caching, config.kv_blocks, static_cast<long long>(stats.steps),
        static_cast<long long>(solo_steps), static_cast<long long>(stats.preempted_total),
        static_cast<long long>(stats.cached_tokens_total));
  }
}

// 48 blocks of 16 tokens hold only a few of the 150..350-token prompts at once: preemption.
Case cpu_case(const char* name, const char* model) {
  return {name,  BackendKind::cpu,
          model, 48,
          150,   200,
          256,   48,
          0,     {{true, 1024}, {false, 1024}, {true, 48}, {false, 48}}};
}

// The mixture-of-experts models: tokens that share an expert in a step are computed together, and
// still come out as they do alone.
Case cpu_moe_case(const char* name, const char* model, const char* reference) {
  Case c = cpu_case(name, model);
  c.reference = reference;
  return c;
}

// The emulator runs TinyStories at tens of tokens per second, prompt and generated alike: 12
// tokens at most, long prompts of 33..48 tokens chunked by a 32-token step budget, and 8 blocks
// of 16 tokens for preemption (the longest sequence, 61 tokens, needs 4; a 96-token context
// lets the engine take a cache that small). TERN_TEST_CUDA_BACKEND=cuda runs the same case on a
// GPU.
Case cuda_emulated_case() {
  return {"CudaEmulatedF32Gguf",
          BackendKind::cuda_emulated,
          "models/tinystories-656k-f32.gguf",
          12,
          33,
          16,
          32,
          8,
          96,
          {{true, 8}, {false, 1024}}};
}

// The same over two tensor-parallel ranks: the all-reduces sum in rank order, so a row's bits
// do not depend on the batch at TP = 2 either.
Case cuda_emulated_tensor_parallel_case() {
  Case c = cuda_emulated_case();
  c.name = "CudaEmulatedF32GgufTensorParallel2";
  c.tensor_parallel = 2;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    TinyStories, EngineBatchInvarianceTest,
    ::testing::Values(cpu_case("CpuF32Gguf", "models/tinystories-656k-f32.gguf"),
                      cpu_case("CpuSafetensors", "models/tinystories-656k"),
                      cpu_moe_case("CpuQwen3Moe", "models/random-qwen3-moe-tiny",
                                   "reference/random-qwen3-moe-tiny.greedy.jsonl"),
                      cpu_moe_case("CpuMixtral", "models/random-mixtral-tiny",
                                   "reference/random-mixtral-tiny.greedy.jsonl"),
                      cpu_moe_case("CpuDeepSeekV3", "models/random-deepseek-v3-tiny",
                                   "reference/random-deepseek-v3-tiny.greedy.jsonl"),
                      cuda_emulated_case(), cuda_emulated_tensor_parallel_case()),
    [](const ::testing::TestParamInfo<Case>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace tern::engine::testing
