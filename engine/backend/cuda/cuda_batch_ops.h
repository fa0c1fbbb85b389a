#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "engine/backend/batch_ops.h"
#include "engine/backend/cuda/device_kv_cache.h"
#include "engine/backend/cuda/device_model_weights.h"
#include "engine/backend/cuda/device_plan.h"
#include "engine/backend/cuda/device_runtime.h"
#include "engine/backend/op_trace.h"
#include "engine/expected.h"
#include "engine/model/rank_shape.h"
#include "kernels/rope_config.h"

namespace tern::engine::cuda {

class Communicator;

struct CudaBuffers {
  std::int32_t max_tokens = 0;      // rows of every per-token activation
  std::int32_t max_logit_rows = 0;  // rows of logit_rows and logits (one per sequence)
  std::int32_t max_context = 0;     // longest sequence attention may see
};

// The op table on a CUDA device: each op is one launch (two for a quantized matmul group: the
// activations' Q8_1 quantization, then a GEMV or GEMM per output) on the backend's stream, over
// activation buffers allocated once. Ops only issue work; a launch that fails keeps its error
// for status() and the ops after it issue nothing.
class CudaBatchOps final : public BatchOps, public ActivationReader {
 public:
  // `runtime`, `weights`, `kv_cache` and `communicator` must outlive the ops. With a
  // communicator of more than one rank, all_reduce sums the ranks' partial rows (in rank order,
  // through a gathered buffer allocated here); without, it does nothing.
  static Expected<CudaBatchOps> create(DeviceRuntime& runtime, const DeviceModelWeights& weights,
                                       const DeviceKvCache& kv_cache, const RankShape& shape,
                                       kernels::RopeLayout rope_layout, const CudaBuffers& buffers,
                                       Stream stream, Communicator* communicator = nullptr);

  // The plan the following ops run over (its device copy must be issued on the same stream).
  void begin(const DevicePlanView& plan);
  // The first failure since begin(), or success.
  const Status& status() const { return status_; }
  // The device rows of logits, [logit rows][vocab], once the graph has run (token masks are
  // applied to them in place).
  float* logits() const { return buffer(Activation::logits); }
  // The residual stream, [tokens][hidden], as the graph left it.
  const float* hidden_states() const { return buffer(Activation::x); }

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
  // CudaBackend refuses models that need these (mixture of experts, latent attention) at
  // creation; should a graph call one anyway, the step fails with an error naming it.
  void route_experts(std::int32_t layer, Activation logits) override;
  void expert_ffn(std::int32_t layer, Activation in, Activation out) override;
  void store_latent_kv(std::int32_t layer, Activation latent) override;
  void latent_attention(std::int32_t layer, Activation q, Activation out) override;

  // Waits for the ops issued so far, then copies the activation out (the op trace's reader).
  Status read_activation(Activation activation, HostActivation& out) override;

 private:
  static constexpr int kActivations = static_cast<int>(Activation::logits) + 1;

  CudaBatchOps(DeviceRuntime& runtime, const DeviceModelWeights& weights,
               const DeviceKvCache& kv_cache, const RankShape& shape,
               kernels::RopeLayout rope_layout, const CudaBuffers& buffers, Stream stream);

  float* buffer(Activation activation) const;
  std::int64_t width(Activation activation) const;
  std::int64_t rows(Activation activation) const;
  // Keeps the first failure; true while nothing has failed.
  bool check(int launch_status, std::string_view kernel);
  bool failed() const { return !status_.ok(); }

  DeviceRuntime* runtime_;
  const kernels::cuda::DeviceKernels* kernels_;
  const DeviceModelWeights* weights_;
  const DeviceKvCache* kv_cache_;
  RankShape shape_;
  kernels::RopeLayout rope_layout_;
  CudaBuffers buffers_;
  Stream stream_;

  DeviceAllocation memory_;
  float* activations_[kActivations] = {};
  Communicator* communicator_ = nullptr;  // null: one device
  float* gathered_ = nullptr;             // [ranks][max_tokens][hidden]: every rank's partial rows
  kernels::cuda::BlockQ8_1* quantized_ = nullptr;  // the current matmul input as Q8_1
  std::uint16_t* rounded_ =
      nullptr;  // ... rounded to BF16 or F16 (kernels/cuda/round_activations.h)
  float* attention_workspace_ = nullptr;  // decode's per-partition partials
  std::size_t attention_workspace_bytes_ = 0;

  DevicePlanView plan_;
  Status status_;
};

}  // namespace tern::engine::cuda
