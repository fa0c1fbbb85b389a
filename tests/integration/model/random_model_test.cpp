// Random models (`random:SHAPE:TYPE`) through the CPU backend: made in memory at a benchmark
// shape, and a forward pass whose logits stay finite over every layer.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/backend/backend_factory.h"
#include "engine/model/model_weights.h"
#include "engine/model/random_model_spec.h"
#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/shared_data.h"

namespace tern::engine::model_tests {
namespace {

std::uint64_t parameters_of(const ModelWeights& weights) {
  std::uint64_t total = 0;
  for (const GgufTensorInfo& tensor : weights.gguf()->tensors()) {
    total += static_cast<std::uint64_t>(tensor.elements());
  }
  return total;
}

// Greedy decoding of `steps` tokens after a short prompt; every logit of every step must be
// finite. Returns the first step's logits.
std::vector<float> expect_finite_greedy_decode(const ModelWeights& weights, int steps) {
  kernels::ThreadPool pool(2);
  BackendSpec spec;
  spec.options.max_sequences = 1;
  spec.options.max_batch_tokens = 64;
  spec.options.max_context = 64;
  auto backend = create_backend(spec, weights, pool);
  EXPECT_TRUE(backend.ok()) << backend.error().message;
  if (!backend.ok()) return {};
  auto runner = SequenceRunner::create(**backend, 64);
  EXPECT_TRUE(runner.ok());
  if (!runner.ok()) return {};
  const std::vector<std::int32_t> prompt{1, 200, 300, 17, 42, 5, 99, 250};
  EXPECT_TRUE(runner->append(prompt).ok());
  std::vector<float> first(runner->logits().begin(), runner->logits().end());
  for (int step = 0; step < steps; ++step) {
    const std::span<const float> logits = runner->logits();
    EXPECT_EQ(logits.size(), static_cast<std::size_t>(weights.config().vocab_size));
    std::size_t bad = 0;
    for (const float logit : logits) bad += std::isfinite(logit) ? 0 : 1;
    EXPECT_EQ(bad, 0u) << "step " << step;
    const std::int32_t token = argmax(logits);
    EXPECT_TRUE(runner->append({&token, 1}).ok());
  }
  return first;
}

class RandomModelOnCpu : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("TERN_SHARED_DIR", ::tern::testing::shared_dir().c_str(), 0); }
};

// The benchmark model of the issues (make_gguf.py's llama-1b, here in Q4_0) is made in seconds:
// the time is printed, not asserted.
TEST_F(RandomModelOnCpu, Llama1bQ4_0LoadsWithItsParametersAndDecodesFinitely) {
  const auto start = std::chrono::steady_clock::now();
  Expected<ModelWeights> weights = load_model("random:llama-1b:q4_0");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  std::printf("random:llama-1b:q4_0 (%.2f GiB) made and loaded in %.2f s\n",
              static_cast<double>(weights->file_bytes()) / (1ULL << 30), seconds);
  const RandomModelShape& shape = *find_random_model_shape("llama-1b");
  EXPECT_EQ(parameters_of(*weights), parameter_count(shape));
  EXPECT_EQ(weights->config().n_layers, 16);
  EXPECT_EQ(weights->config().vocab_size, 50257);
  expect_finite_greedy_decode(*weights, 4);
}

TEST_F(RandomModelOnCpu, EveryTinyShapeDecodesFinitelyAndTheSameTwice) {
  for (const char* shape : {"tiny", "tiny-moe", "tiny-mla"}) {
    for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0"}) {
      const std::string text = std::string("random:") + shape + ":" + type;
      SCOPED_TRACE(text);
      Expected<ModelWeights> weights = load_model(text);
      ASSERT_TRUE(weights.ok()) << weights.error().message;
      const std::vector<float> first = expect_finite_greedy_decode(*weights, 6);
      Expected<ModelWeights> again = load_model(text);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(expect_finite_greedy_decode(*again, 1), first);
    }
  }
}

}  // namespace
}  // namespace tern::engine::model_tests
