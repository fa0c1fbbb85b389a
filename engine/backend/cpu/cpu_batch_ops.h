#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend/batch_ops.h"
#include "engine/backend/layer_matrices.h"
#include "engine/backend/op_trace.h"
#include "engine/batch_plan.h"
#include "engine/model/model_tables.h"
#include "engine/model/model_weights.h"
#include "engine/model/rank_shape.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/function_ref.h"
#include "kernels/cpu/kv_store.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/moe_router.h"

namespace tern::kernels {
class ThreadPool;
}

namespace tern::engine {

// A loaded tensor as the CPU kernels read it, in place.
inline kernels::WeightMatrix weight_matrix_of(const WeightTensor& tensor) {
  return kernels::WeightMatrix{tensor.type, tensor.data, tensor.rows, tensor.cols,
                               tensor.row_bytes};
}
std::vector<kernels::WeightMatrix> weight_matrices_of(std::span<const WeightTensor> tensors);

struct CpuBuffers {
  std::int32_t max_tokens = 0;      // rows of every per-token activation
  std::int32_t max_logit_rows = 0;  // rows of logit_rows
  std::int32_t max_context = 0;     // longest sequence attention may see
};

// The op table on the CPU: each op runs the kernels of kernels/cpu over the whole batch,
// splitting the work over the thread pool inside the call. Activations live in buffers sized
// once, so a forward pass allocates nothing. Weights are read in place from the model's mapping
// (or from their repacked tiles), norms and RoPE tables from the model's ModelTables.
class CpuBatchOps final : public BatchOps, public ActivationReader {
 public:
  using LayerMatrices = engine::LayerMatrices<kernels::WeightMatrix>;

  // `weights`, `tables` and `pool` must outlive the ops.
  CpuBatchOps(const ModelWeights& weights, const ModelTables& tables, const RankShape& shape,
              kernels::ThreadPool& pool, const CpuBuffers& buffers);

  // A mixture-of-experts layer's routed experts (empty for a dense layer).
  struct ExpertMatrices {
    std::vector<kernels::WeightMatrix> gate, up, down;
  };
  // Latent attention's per-head projections: k_absorb [kv_lora][nope] takes a query's nope part
  // into the latent space, v_up [value_head_dim][kv_lora] takes an attended latent out of it.
  struct LatentMatrices {
    std::vector<kernels::WeightMatrix> k_absorb, v_up;
  };

  // Matrices as the kernels read them: repack_for_kernels() may replace them with tiles.
  std::vector<LayerMatrices>& layer_matrices() { return layers_; }
  std::vector<ExpertMatrices>& expert_matrices() { return experts_; }
  std::vector<LatentMatrices>& latent_matrices() { return latent_matrices_; }
  kernels::WeightMatrix& output_matrix() { return output_; }
  // Every matrix a forward pass may read (absent ones have data == nullptr), for checks and
  // repacking.
  template <class Visit>
  void for_each_matrix(Visit&& visit) {
    for (LayerMatrices& layer : layers_) {
      for (kernels::WeightMatrix* matrix :
           {&layer.wq, &layer.wk, &layer.wv, &layer.wo, &layer.w_gate, &layer.w_up, &layer.w_down,
            &layer.router, &layer.shared_gate, &layer.shared_up, &layer.shared_down, &layer.q_a,
            &layer.q_b, &layer.kv_a}) {
        if (matrix->data != nullptr) visit(*matrix);
      }
    }
    for (ExpertMatrices& experts : experts_) {
      for (auto* list : {&experts.gate, &experts.up, &experts.down}) {
        for (kernels::WeightMatrix& matrix : *list) visit(matrix);
      }
    }
    for (LatentMatrices& latent : latent_matrices_) {
      for (auto* list : {&latent.k_absorb, &latent.v_up}) {
        for (kernels::WeightMatrix& matrix : *list) visit(matrix);
      }
    }
    visit(output_);
  }

  // The router kernel's view of a model's expert routing.
  static kernels::MoeRouting routing_of(const MoeConfig& moe);

  // The cache layout of one layer: K and V per KV head, or latent attention's one shared row.
  static kernels::KvCacheLayout kv_layout(const RankShape& shape, kernels::KvType type,
                                          std::int32_t block_size);

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
  void route_experts(std::int32_t layer, Activation logits) override;
  void expert_ffn(std::int32_t layer, Activation in, Activation out) override;
  void store_latent_kv(std::int32_t layer, Activation latent) override;
  void latent_attention(std::int32_t layer, Activation q, Activation out) override;

  Status read_activation(Activation activation, HostActivation& out) override;

  // Expert weight bytes the last forward pass read (each routed expert once per layer).
  std::uint64_t expert_bytes_read() const { return expert_bytes_read_; }

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
  // Runs attention work items (thread index, thread count) over the pool, or on the calling
  // thread alone when the step's query-key products are few.
  void run_attention_items(std::int64_t heads, std::int64_t head_dim,
                           kernels::FunctionRef<void(int, int)> items);
  // Rotary embedding of [tokens][heads * head_dim] rows, row_stride apart, at the step's
  // positions; the angles are computed once a step, at the first call, for every layer.
  void rotate(float* rows, std::int64_t tokens, std::int64_t row_stride, int heads, int head_dim);
  void allocate_expert_buffers();
  void allocate_latent_buffers();
  // Rows of [tokens][heads * head_width] floats, row_stride apart; head h's slice starts at
  // rows + h * head_width.
  struct HeadSlices {
    float* rows;
    std::int64_t head_width;
    std::int64_t row_stride;
  };
  void per_head_matmul(std::span<const kernels::WeightMatrix> matrices, HeadSlices in,
                       HeadSlices out, std::int64_t tokens);
  void prepare_latent_matrices();

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
  std::vector<KvPools> kv_pools_;  // one per layer; latent attention has no V pool

  // Activations, [rows][width].
  std::vector<float> x_, normed_, q_, k_, v_, attention_, projected_, gate_, up_, logit_rows_;
  std::vector<float> router_logits_, shared_gate_, shared_up_, shared_out_, q_lora_, latent_;
  std::vector<kernels::AttentionScratch> attention_scratch_;
  std::vector<float> rope_cosines_, rope_sines_;  // [tokens][pairs] of the step
  bool rope_angles_ready_ = false;

  // Mixture of experts: the routing of the current layer, tokens grouped by expert, and the
  // experts' rows. Slot s = the s-th (token, expert) pair in expert order.
  std::vector<ExpertMatrices> experts_;
  kernels::MoeRouting routing_{};
  std::vector<float> router_scratch_;
  std::vector<std::int32_t> token_experts_;   // [tokens][experts_per_token]
  std::vector<float> token_weights_;          // [tokens][experts_per_token]
  std::vector<std::int32_t> token_slots_;     // [tokens][experts_per_token]: its slot
  std::vector<std::int32_t> expert_offsets_;  // [n_experts + 1]: each expert's first slot
  std::vector<std::int32_t> expert_cursor_;   // [n_experts]: the next free slot while grouping
  std::vector<std::int32_t> slot_tokens_;     // [slots]: the token of each slot
  std::vector<float> expert_in_, expert_gate_, expert_up_;  // a group of experts: [tokens][...]
  std::vector<float> expert_out_;                           // [slots][hidden]
  std::uint64_t expert_bytes_read_ = 0;

  // Latent attention: per-head matrices, the transposed kv_b halves they may own, and the
  // absorbed queries and attended latents of the batch.
  std::vector<LatentMatrices> latent_matrices_;
  std::vector<std::vector<float>> absorb_storage_;
  std::vector<float> q_absorbed_, attended_latent_;

  const BatchPlan* plan_ = nullptr;
  float* logits_ = nullptr;
  std::int64_t logit_rows_count_ = 0;
};

}  // namespace tern::engine
