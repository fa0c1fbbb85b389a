#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend/batch_ops.h"
#include "engine/backend/layer_matrices.h"
#include "engine/batch_plan.h"
#include "engine/model/model_tables.h"
#include "engine/model/model_weights.h"
#include "engine/model/rank_shape.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/kv_store.h"
#include "kernels/cpu/matmul.h"

namespace tern::kernels {
class ThreadPool;
}

namespace tern::engine {

struct CpuBuffers {
  std::int32_t max_tokens = 0;      // rows of every per-token activation
  std::int32_t max_logit_rows = 0;  // rows of logit_rows
  std::int32_t max_context = 0;     // longest sequence attention may see
};

// The op table on the CPU: each op runs the kernels of kernels/cpu over the whole batch,
// splitting the work over the thread pool inside the call. Activations live in buffers sized
// once, so a forward pass allocates nothing. Weights are read in place from the model's mapping
// (or from their repacked tiles), norms and RoPE tables from the model's ModelTables.
class CpuBatchOps final : public BatchOps {
 public:
  using LayerMatrices = engine::LayerMatrices<kernels::WeightMatrix>;

  // `weights`, `tables` and `pool` must outlive the ops.
  CpuBatchOps(const ModelWeights& weights, const ModelTables& tables, const RankShape& shape,
              kernels::ThreadPool& pool, const CpuBuffers& buffers);

  // Matrices as the kernels read them: repack_for_kernels() may replace them with tiles.
  std::vector<LayerMatrices>& layer_matrices() { return layers_; }
  kernels::WeightMatrix& output_matrix() { return output_; }

  Status allocate_kv_cache(const kernels::KvCacheLayout& layout, std::int32_t num_blocks);
  Status copy_kv_blocks(std::span<const BlockCopy> copies);
  std::int32_t kv_blocks() const { return kv_blocks_; }
  std::int32_t kv_block_size() const { return kv_layout_.block_size; }

  // The plan and logits buffer the following ops work on; both must stay alive until the last.
  void begin(const BatchPlan& plan, std::span<float> logits);

  void embed(Activation out) override;
  void rms_norm(Activation in, std::optional<Activation> residual, VectorRef weight,
                std::int32_t rows_per_token, std::int32_t width, Activation out) override;
  void matmul(std::int32_t layer, std::span<const MatmulOutput> group, Activation in) override;
  void add_bias(VectorRef bias, Activation rows) override;
  void rope(Activation rows, std::int32_t heads) override;
  void store_kv(std::int32_t layer, Activation k, Activation v) override;
  void paged_attention(std::int32_t layer, Activation q, Activation out) override;
  void add(Activation into, Activation from) override;
  void silu_mul(Activation gate, Activation up, Activation out) override;
  void gather_logit_rows(Activation from, Activation to) override;
  void all_reduce(Activation rows) override;

 private:
  struct AlignedFree {
    void operator()(std::byte* memory) const { std::free(memory); }
  };
  using AlignedBytes = std::unique_ptr<std::byte[], AlignedFree>;
  struct KvPools {
    AlignedBytes k, v;
  };

  float* data(Activation activation);
  std::int64_t width(Activation activation) const;
  std::int64_t rows(Activation activation) const;
  const std::vector<float>& vector(VectorRef ref) const;
  const kernels::WeightMatrix& matrix(std::int32_t layer, Matrix name) const;

  const ModelWeights& weights_;
  const ModelTables& tables_;
  RankShape shape_;
  kernels::ThreadPool& pool_;
  CpuBuffers buffers_;
  kernels::MatmulWorkspace workspace_;
  std::vector<LayerMatrices> layers_;
  kernels::WeightMatrix output_{};

  kernels::KvCacheLayout kv_layout_{};
  std::int32_t kv_blocks_ = 0;
  std::vector<KvPools> kv_pools_;  // one per layer

  // Activations, [rows][width].
  std::vector<float> x_, normed_, q_, k_, v_, attention_, projected_, gate_, up_, logit_rows_;
  std::vector<kernels::AttentionScratch> attention_scratch_;

  const BatchPlan* plan_ = nullptr;
  float* logits_ = nullptr;
  std::int64_t logit_rows_count_ = 0;
};

}  // namespace tern::engine
