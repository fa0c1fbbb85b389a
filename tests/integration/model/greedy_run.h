#pragma once

// Greedy decoding of a model on the CPU backend for the reference tests, and temporary files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/model/model_weights.h"
#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/integration/model/reference_data.h"

namespace tern::engine::model_tests {

inline constexpr std::int32_t kEos = 2;

struct ModelRun {
  std::vector<float> last_prompt_logits;
  std::vector<std::int32_t> greedy_ids;
};

// Greedy decoding from the prompt for as many tokens as the reference, stopping at EOS.
inline ModelRun run_greedy(const ModelWeights& weights,
                           const ::tern::testing::GreedyReference& reference,
                           kernels::ThreadPool& pool) {
  ModelRun run;
  BackendSpec spec;
  spec.options.max_sequences = 1;
  spec.options.max_batch_tokens = 64;
  const auto context =
      static_cast<std::int32_t>(reference.prompt_ids.size() + reference.greedy_ids.size() + 1);
  spec.options.max_context = context;
  auto backend = create_backend(spec, weights, pool);
  EXPECT_TRUE(backend.ok()) << backend.error().message;
  if (!backend.ok()) return run;
  auto runner = SequenceRunner::create(**backend, context, KvCacheType::f32);
  EXPECT_TRUE(runner.ok());
  if (!runner.ok()) return run;
  EXPECT_TRUE(runner->append(reference.prompt_ids).ok());
  run.last_prompt_logits.assign(runner->logits().begin(), runner->logits().end());
  for (std::size_t step = 0; step < reference.greedy_ids.size(); ++step) {
    const std::int32_t token = argmax(runner->logits());
    run.greedy_ids.push_back(token);
    if (token == kEos) break;
    EXPECT_TRUE(runner->append({&token, 1}).ok());
  }
  return run;
}

// A file or directory under the temp directory, removed with the object.
struct TempPath {
  std::filesystem::path path;
  explicit TempPath(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("tern-model-test-" + std::to_string(::getpid()) + "-" + name)) {}
  ~TempPath() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  std::string string() const { return path.string(); }
};

}  // namespace tern::engine::model_tests
