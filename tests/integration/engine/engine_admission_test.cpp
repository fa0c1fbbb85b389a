// Admission on TinyStories: what a request costs (prompts x n) is checked before anything is
// queued, and a KV cache too small for one request at full context is refused at startup.
#include <gtest/gtest.h>

#include "tests/integration/engine/engine_harness.h"

namespace tern::engine::testing {
namespace {

class EngineAdmissionTest : public TinyStoriesEngineTest {
 protected:
  Request request(std::int32_t n, std::int32_t max_tokens) const {
    Request request = greedy_request("Once upon a time", max_tokens);
    request.n = n;
    return request;
  }
};

TEST_F(EngineAdmissionTest, FanOutBeyondTheLimitsIsRefusedBeforeAnythingIsQueued) {
  EngineOptions options = factory_->default_options();
  options.admission = {.max_waiting_sequences = 1024,
                       .max_sequences_per_request = 256,
                       .max_waiting_share_per_client = 0.5};
  Engine* engine = factory_->make(options);
  ASSERT_NE(engine, nullptr);

  std::vector<Request> fan_out(100, request(128, 1));
  auto refused = engine->submit_all(std::move(fan_out), "client");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::invalid_field);
  EXPECT_EQ(refused.error().field, "n");
  EXPECT_NE(refused.error().message.find("max_sequences_per_request"), std::string::npos);
  EXPECT_EQ(engine->stats().waiting, 0);

  // At the limit it is served, every sample of every prompt.
  std::vector<Request> at_limit(2, request(128, 2));
  auto handles = engine->submit_all(std::move(at_limit), "client");
  ASSERT_TRUE(handles.ok()) << handles.error().message;
  for (RequestHandle& handle : *handles) {
    const RequestOutput output = collect(handle, 128);
    for (const SampleOutput& sample : output.samples) {
      EXPECT_EQ(sample.finish_reason, FinishReason::length) << sample.message;
      EXPECT_EQ(sample.ids.size(), 2u);
    }
  }
  EXPECT_TRUE(wait_for_full_pool(*engine));
}

TEST_F(EngineAdmissionTest, AKvCacheSmallerThanTheContextIsRefusedWithWhatWouldFit) {
  EngineOptions options = factory_->default_options();
  ASSERT_EQ(options.context_length, 512);
  options.num_kv_blocks = 25;  // 400 tokens
  auto refused = factory_->try_make(options);
  ASSERT_FALSE(refused.ok());
  const std::string& message = refused.error().message;
  EXPECT_NE(message.find("holds 400 tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("context of 512 tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("max_model_len to at most 400"), std::string::npos) << message;

  // With the context cut to what fits, every valid request completes.
  options.context_length = 400;
  Engine* engine = factory_->make(options);
  ASSERT_NE(engine, nullptr);
  Request longest = request(1, 1);
  longest.stop.max_tokens = 400 - static_cast<std::int32_t>(longest.prompt_ids.size());
  longest.stop.ignore_eos = true;
  auto handle = engine->submit(std::move(longest));
  ASSERT_TRUE(handle.ok()) << handle.error().message;
  const RequestOutput output = collect(*handle);
  EXPECT_EQ(output.samples[0].finish_reason, FinishReason::length) << output.samples[0].message;
}

}  // namespace
}  // namespace tern::engine::testing
