#pragma once

#include <memory>

#include "engine/backend/backend.h"
#include "engine/model/model_weights.h"

namespace tern::kernels {
class ThreadPool;
}

namespace tern::engine {

struct CpuBackendOptions {
  std::int32_t max_batch_tokens = 512;  // tokens per forward pass at most (activation buffers)
  std::int32_t max_sequences = 64;      // sequences per forward pass at most
  std::int32_t max_context = 0;         // longest sequence; 0 means the model's context length
};

// Runs Llama-family models (llama, qwen2, qwen3) on the CPU with the kernels of kernels/cpu.
// Weights are read in place from the model's mapping; activations live in buffers sized once
// from the options, so forward() allocates nothing.
class CpuBackend final : public Backend {
 public:
  // `weights` and `pool` must outlive the backend.
  static Expected<std::unique_ptr<CpuBackend>> create(const ModelWeights& weights,
                                                      kernels::ThreadPool& pool,
                                                      const CpuBackendOptions& options);
  ~CpuBackend() override;

  std::string_view name() const override { return "cpu"; }
  std::uint64_t expert_bytes_read() const override;
  std::int32_t vocab_size() const override;
  std::int32_t max_batch_tokens() const override;
  std::int32_t max_sequences() const override;
  std::uint64_t kv_block_bytes(KvCacheType type, std::int32_t block_size) const override;
  Status allocate_kv_cache(const KvCacheSpec& spec) override;
  Status copy_kv_blocks(std::span<const BlockCopy> copies) override;
  Status forward(const BatchPlan& plan, std::span<float> logits) override;
  Status observe_ops(OpObserver* observer) override;
  Status time_ops(std::vector<OpTime>* times) override;

 private:
  struct State;
  explicit CpuBackend(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tern::engine
