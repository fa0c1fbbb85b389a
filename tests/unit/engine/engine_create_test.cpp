// Engine::create against a backend that computes nothing: the checks it makes before it starts.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/engine.h"

namespace tern::engine {
namespace {

class NullBackend final : public Backend {
 public:
  explicit NullBackend(std::int32_t max_sequences) : max_sequences_(max_sequences) {}

  std::string_view name() const override { return "null"; }
  std::int32_t vocab_size() const override { return 8; }
  std::int32_t max_batch_tokens() const override { return 64; }
  std::int32_t max_sequences() const override { return max_sequences_; }
  std::uint64_t kv_block_bytes(KvCacheType, std::int32_t) const override { return 1024; }
  Status allocate_kv_cache(const KvCacheSpec&) override { return Status::success(); }
  Status copy_kv_blocks(std::span<const BlockCopy>) override { return Status::success(); }
  Status forward(const BatchPlan&, std::span<float> logits) override {
    std::ranges::fill(logits, 0.0f);
    return Status::success();
  }

 private:
  std::int32_t max_sequences_;
};

EngineOptions options_with(std::int32_t max_num_seqs) {
  EngineOptions options;
  options.context_length = 64;
  options.num_kv_blocks = 32;
  options.scheduler.max_num_seqs = max_num_seqs;
  options.scheduler.max_num_batched_tokens = 64;
  return options;
}

// The scheduler runs all its running sequences in one pass: more than the backend's buffers
// hold would fail at the first full step, so the engine refuses to start.
TEST(EngineCreate, RefusesMoreSequencesThanOneForwardPassTakes) {
  NullBackend backend(4);
  auto refused = Engine::create(backend, nullptr, options_with(5));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "engine: max_num_seqs 5 exceeds the 4 sequences one forward pass of the null backend "
            "takes");
  auto engine = Engine::create(backend, nullptr, options_with(4));
  ASSERT_TRUE(engine.ok()) << engine.error().message;
}

}  // namespace
}  // namespace tern::engine
