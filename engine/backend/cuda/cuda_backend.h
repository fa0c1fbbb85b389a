#pragma once

#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/backend_spec.h"
#include "engine/backend/cuda/device_runtime.h"
#include "engine/backend/tensor_parallel_shape.h"
#include "engine/model/model_weights.h"

namespace tern::engine::cuda {

class Communicator;

// One rank of a tensor-parallel group: the slice of the model it holds and its link to the
// others. The default is the whole model on one device.
struct RankContext {
  RankSlice slice;
  Communicator* communicator = nullptr;  // must outlive the backend when slice.ranks > 1
};

// Runs Llama-family models (llama, qwen2, qwen3) on one CUDA device through a DeviceRuntime:
// the CUDA runtime on a GPU, or the SIMT emulator (`cuda-emulated`). Weights are uploaded once
// in their file's formats; activations, the plan's device copy and its pinned staging buffer
// are sized once from the options, so forward() allocates nothing. A forward pass is one stream
// of launches, the copies of what the engine asked of the logits rows (whole rows, or each row's
// top candidates and sums: device_logit_candidates.h) and one synchronisation. Decode-only steps
// replay a CUDA graph of their batch-size bucket (decode_graphs.h), captured with the KV cache;
// prefill and mixed steps, and every step with cuda_graphs off, launch eagerly.
class CudaBackend final : public Backend {
 public:
  // Takes the runtime; uploads `weights`, which must outlive the backend (the tables are read
  // from them once). Errors name the model file, the tensor or the sizes that do not fit.
  static Expected<std::unique_ptr<CudaBackend>> create(std::unique_ptr<DeviceRuntime> runtime,
                                                       int device, const ModelWeights& weights,
                                                       const BackendOptions& options,
                                                       const CudaOptions& cuda_options = {});
  // Rank `rank.slice.rank` of a tensor-parallel group over a runtime its ranks share. Its
  // forward() writes its slice of the vocabulary into every logits row (of vocab_size(), the
  // whole vocabulary) and its all-reduces go through rank.communicator; the caller runs each
  // rank on a thread of its own (TensorParallelBackend). Ranks return whole rows only.
  static Expected<std::unique_ptr<CudaBackend>> create_rank(std::shared_ptr<DeviceRuntime> runtime,
                                                            int device, const ModelWeights& weights,
                                                            const BackendOptions& options,
                                                            const CudaOptions& cuda_options,
                                                            const RankContext& rank);
  ~CudaBackend() override;

  std::string_view name() const override;
  std::int32_t vocab_size() const override;
  std::int32_t max_batch_tokens() const override;
  std::int32_t max_sequences() const override;
  std::uint64_t kv_block_bytes(KvCacheType type, std::int32_t block_size) const override;
  // f16 or bf16; the CUDA kernels take no f32 cache.
  Status allocate_kv_cache(const KvCacheSpec& spec) override;
  Status copy_kv_blocks(std::span<const BlockCopy> copies) override;
  // Captures the decode graphs against a one-block pool to measure them, then gives what is
  // left of gpu_memory_utilization of the device (an error naming the sizes when nothing is).
  Expected<std::optional<std::uint64_t>> device_kv_budget(KvCacheType type,
                                                          std::int32_t block_size) override;
  std::optional<DeviceMemoryUsage> device_memory() const override;
  Status forward(const BatchPlan& plan, std::span<float> logits) override;
  // While an observer is set, every step runs eagerly (no decode graph) and waits after each op.
  Status observe_ops(OpObserver* observer) override;
  Status time_ops(std::vector<OpTime>* times) override;
  std::int32_t logit_candidate_count() const override;
  // With candidates: the rows' token masks are applied on the device before them.
  bool applies_token_masks() const override;
  Status forward_with_candidates(const BatchPlan& plan, std::span<const LogitRowRequest> rows,
                                 std::span<float> logits, LogitCandidateRows& candidates) override;
  Status fetch_logit_rows(std::span<const std::int32_t> rows, std::span<float> logits) override;

  // A tensor-parallel rank's half of device-side sampling (TensorParallelBackend merges the
  // ranks'): the forward pass, the rows' token masks over its columns, its columns of the rows
  // asked for whole, and its vocabulary
  // slice's top candidates ([rows][slice_candidate_count()], ids within the slice); then, given
  // each row's maximum over all ranks, its slice's parts of the row sums. 0 candidates: none.
  std::int32_t slice_candidate_count() const;
  std::int32_t vocab_offset() const;
  Status forward_slice_candidates(const BatchPlan& plan, std::span<const LogitRowRequest> rows,
                                  std::span<float> logits, std::span<float> values,
                                  std::span<std::int32_t> ids);
  Status slice_sums(std::span<const LogitRowRequest> rows, std::span<const float> row_max,
                    std::span<double> exp_sum, std::span<double> scaled_mass);

  // The residual stream of the last forward pass's tokens ([tokens][hidden], copied out): after
  // the final all-reduce every rank of a group must hold the same bits (tests).
  Expected<std::vector<float>> hidden_states();

  // The decode graphs held now, captured over the backend's life (recaptures included), and the
  // decode steps that replayed one.
  int decode_graph_count() const;
  std::int64_t decode_graph_captures() const;
  std::int64_t decode_graph_replays() const;

 private:
  struct State;
  explicit CudaBackend(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tern::engine::cuda
