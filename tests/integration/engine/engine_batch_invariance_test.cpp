// tern's promise: a request's greedy output and logprobs are bit-identical whether it runs
// alone or among 31 others, with or without the prefix cache, and through preemption.
#include <gtest/gtest.h>

#include <bit>
#include <random>

#include "tests/integration/engine/engine_harness.h"
#include "tests/integration/model/reference_data.h"
#include "tests/support/shared_data.h"

namespace tern::engine::testing {
namespace {

constexpr std::int32_t kMaxTokens = 48;

struct Prompt {
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> reference;  // greedy ids, for the 8 reference prompts
};

// The 8 reference prompts, then 24 of mixed lengths: some share long prefixes (prefix-cache
// hits inside the batch), some repeat a reference prompt, some are long enough to be chunked.
std::vector<Prompt> make_prompts(const std::vector<::tern::testing::GreedyReference>& references,
                                 std::int32_t vocab) {
  std::vector<Prompt> prompts;
  for (const auto& reference : references)
    prompts.push_back({reference.prompt_ids, reference.greedy_ids});
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
        ids = random_ids(150 + rng() % 200);
        break;
      default:
        ids = random_ids(1 + rng() % 30);
    }
    ids.insert(ids.begin(), 1);  // BOS
    prompts.push_back({ids, {}});
  }
  return prompts;
}

Request greedy_request(const std::vector<std::int32_t>& prompt) {
  Request request;
  request.prompt_ids = prompt;
  request.sampling.temperature = 0;
  request.sampling.logprobs = true;
  request.stop.max_tokens = kMaxTokens;
  return request;
}

std::vector<RequestOutput> run_solo(Engine& engine, const std::vector<Prompt>& prompts) {
  std::vector<RequestOutput> outputs;
  for (const Prompt& prompt : prompts) {
    auto handle = engine.submit(greedy_request(prompt.ids));
    EXPECT_TRUE(handle.ok()) << handle.error().message;
    if (!handle) return outputs;
    outputs.push_back(collect(*handle));
  }
  return outputs;
}

std::vector<RequestOutput> run_together(Engine& engine, const std::vector<Prompt>& prompts) {
  std::vector<RequestHandle> handles;
  for (const Prompt& prompt : prompts) {
    auto handle = engine.submit(greedy_request(prompt.ids));
    EXPECT_TRUE(handle.ok()) << handle.error().message;
    if (!handle) return {};
    handles.push_back(std::move(*handle));
  }
  std::vector<RequestOutput> outputs;
  for (RequestHandle& handle : handles) outputs.push_back(collect(handle));
  return outputs;
}

class EngineBatchInvarianceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(EngineBatchInvarianceTest, BatchedOutputsEqualSoloRunsAndTheReference) {
  TERN_REQUIRE_SHARED(model_path, GetParam());
  TERN_REQUIRE_SHARED(reference_path, "reference/tinystories-656k.greedy.jsonl");
  auto factory = TinyEngineFactory::load(model_path.string());
  ASSERT_TRUE(factory);
  const auto references = ::tern::testing::read_greedy_references(reference_path);
  ASSERT_EQ(references.size(), 8u);
  const auto prompts = make_prompts(references, factory->weights().config().vocab_size);

  EngineOptions solo_options = factory->default_options();
  solo_options.enable_prefix_caching = false;
  Engine* engine = factory->make(solo_options);
  ASSERT_NE(engine, nullptr);
  const std::vector<RequestOutput> solo = run_solo(*engine, prompts);
  ASSERT_EQ(solo.size(), prompts.size());
  for (std::size_t p = 0; p < prompts.size(); ++p) {
    if (!prompts[p].reference.empty()) {
      EXPECT_EQ(solo[p].samples[0].ids, prompts[p].reference) << "reference prompt " << p;
    }
  }

  struct Config {
    bool prefix_caching;
    std::int32_t kv_blocks;
  };
  // 48 blocks of 16 tokens hold only a few of the long prompts at once: preemption.
  for (const Config config :
       {Config{true, 1024}, Config{false, 1024}, Config{true, 48}, Config{false, 48}}) {
    SCOPED_TRACE(::testing::Message() << "prefix caching " << config.prefix_caching
                                      << ", KV blocks " << config.kv_blocks);
    EngineOptions options = factory->default_options();
    options.enable_prefix_caching = config.prefix_caching;
    options.num_kv_blocks = config.kv_blocks;
    engine = factory->make(options);
    ASSERT_NE(engine, nullptr);
    const std::vector<RequestOutput> together = run_together(*engine, prompts);
    ASSERT_EQ(together.size(), prompts.size());
    for (std::size_t p = 0; p < prompts.size(); ++p) {
      const SampleOutput& a = together[p].samples[0];
      const SampleOutput& b = solo[p].samples[0];
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
    const EngineStats stats = engine->stats();
    if (config.kv_blocks == 48) {
      EXPECT_GT(stats.preempted_total, 0);
    }
    EXPECT_EQ(stats.cached_tokens_total > 0, config.prefix_caching);
    EXPECT_TRUE(wait_for_full_pool(*engine));
  }
}

INSTANTIATE_TEST_SUITE_P(TinyStories, EngineBatchInvarianceTest,
                         ::testing::Values("models/tinystories-656k-f32.gguf",
                                           "models/tinystories-656k"));

}  // namespace
}  // namespace tern::engine::testing
