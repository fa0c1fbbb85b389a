#pragma once

// A TinyStories engine for the integration tests, and helpers that run requests to the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/engine.h"
#include "engine/model/model_weights.h"
#include "engine/tokenizer/tokenizer.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/shared_data.h"

namespace tern::engine::testing {

// What one sample produced.
struct SampleOutput {
  std::vector<std::int32_t> ids;
  std::string text;
  std::vector<float> logprobs;
  FinishReason finish_reason = FinishReason::error;
  std::string message;
};

struct RequestOutput {
  std::vector<SampleOutput> samples;
  Usage usage;
  std::int32_t events = 0;
};

// Reads a request's events until the last one.
inline RequestOutput collect(RequestHandle& handle, std::int32_t n = 1) {
  RequestOutput output;
  output.samples.resize(static_cast<std::size_t>(n));
  for (;;) {
    RequestEvent event = handle.next();
    ++output.events;
    SampleOutput& sample = output.samples.at(static_cast<std::size_t>(event.index));
    if (event.token >= 0) {
      sample.ids.push_back(event.token);
      sample.logprobs.push_back(event.logprob);
    }
    sample.text += event.text;
    if (event.finish_reason) {
      sample.finish_reason = *event.finish_reason;
      sample.message = event.message;
    }
    if (event.done) {
      output.usage = event.usage;
      return output;
    }
  }
}

// A model, a tokenizer and a pool loaded once; engines made on demand over a fresh backend of
// `kind` (cuda_emulated: the CUDA backend on the SIMT emulator, no GPU needed).
class TinyEngineFactory {
 public:
  // `tensor_parallel` > 1: that many ranks on devices 0..N-1 (an emulated machine of N).
  static std::unique_ptr<TinyEngineFactory> load(const std::string& model_path,
                                                 BackendKind kind = BackendKind::cpu,
                                                 int tensor_parallel = 1) {
    auto weights = load_model(model_path);
    if (!weights) {
      ADD_FAILURE() << weights.error().message;
      return nullptr;
    }
    auto tokenizer = Tokenizer::load(model_path);
    if (!tokenizer) {
      ADD_FAILURE() << tokenizer.error().message;
      return nullptr;
    }
    auto factory =
        std::unique_ptr<TinyEngineFactory>(new TinyEngineFactory(std::move(*weights), kind));
    factory->tensor_parallel_ = tensor_parallel;
    factory->tokenizer_ = std::move(*tokenizer);
    return factory;
  }

  EngineOptions default_options() const {
    EngineOptions options;
    options.context_length = weights_.config().context_length;
    options.eos_token_ids = weights_.config().eos_token_ids;
    // The CUDA kernels take f16 and bf16 KV caches only.
    options.kv_cache_type = is_cuda(kind_) ? KvCacheType::f16 : KvCacheType::f32;
    options.num_kv_blocks = 1024;
    options.scheduler.max_num_seqs = 64;
    options.scheduler.max_num_batched_tokens = 256;
    return options;
  }

  // The engine lives until the next make(), which stops it before replacing its backend.
  Engine* make(const EngineOptions& options) {
    auto engine = try_make(options);
    if (!engine) {
      ADD_FAILURE() << engine.error().message;
      return nullptr;
    }
    return *engine;
  }

  Expected<Engine*> try_make(const EngineOptions& options) {
    engine_.reset();
    BackendSpec backend_spec;
    backend_spec.kind = kind_;
    backend_spec.tensor_parallel = tensor_parallel_;
    backend_spec.emulated.devices = std::max(backend_spec.emulated.devices, tensor_parallel_);
    backend_spec.options.max_batch_tokens = 256;
    backend_spec.options.max_sequences = 64;
    backend_spec.options.max_context = weights_.config().context_length;
    auto backend = create_backend(backend_spec, weights_, pool_);
    if (!backend) return backend.error();
    backend_ = std::move(*backend);
    auto engine = Engine::create(*backend_, tokenizer_.get(), options);
    if (!engine) return engine.error();
    engine_ = std::move(*engine);
    return engine_.get();
  }

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelWeights& weights() const { return weights_; }

 private:
  TinyEngineFactory(ModelWeights weights, BackendKind kind)
      : weights_(std::move(weights)), kind_(kind) {}

  ModelWeights weights_;
  BackendKind kind_;
  int tensor_parallel_ = 1;
  std::unique_ptr<Tokenizer> tokenizer_;
  kernels::ThreadPool pool_{2};
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Engine> engine_;
};

// Tests over the TinyStories F32 GGUF; they skip without ../shared.
class TinyStoriesEngineTest : public ::testing::Test {
 protected:
  static constexpr const char* kModel = "models/tinystories-656k-f32.gguf";

  void SetUp() override {
    const std::filesystem::path path = ::tern::testing::shared_path(kModel);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "needs " << path.string();
    factory_ = TinyEngineFactory::load(path.string());
    ASSERT_TRUE(factory_);
  }

  // A greedy request for `prompt`, tokenized with BOS.
  Request greedy_request(std::string_view prompt, std::int32_t max_tokens) const {
    Request request;
    request.prompt_ids = factory_->tokenizer().encode(prompt, true);
    request.sampling.temperature = 0;
    request.stop.max_tokens = max_tokens;
    return request;
  }

  std::unique_ptr<TinyEngineFactory> factory_;
};

// The engine publishes its counters after each loop: polls them until `holds` is true of them,
// for up to 10 s. False if it never was.
template <typename Predicate>
bool wait_for_stats(const Engine& engine, Predicate holds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (holds(engine.stats())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// Waits until the pool is whole again.
inline bool wait_for_full_pool(const Engine& engine) {
  return wait_for_stats(engine, [](const EngineStats& stats) {
    return stats.kv_free_blocks == stats.kv_blocks && stats.running == 0 && stats.waiting == 0;
  });
}

}  // namespace tern::engine::testing
