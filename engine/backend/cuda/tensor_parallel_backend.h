#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/backend_spec.h"
#include "engine/backend/cuda/communicator.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/device_runtime.h"
#include "engine/backend/cuda/rank_workers.h"
#include "engine/model/model_weights.h"

namespace tern::engine::cuda {

// One model over N devices (tensor parallelism, docs/gpu.md): rank r, a CudaBackend holding
// its slice of every layer (tensor_parallel_shape.h) on devices[r], runs on worker thread r
// (RankWorkers), with its own stream, KV pool of its KV heads and decode graphs. The engine sees
// one backend: every call runs on all ranks at once and returns when all are done. Two
// all-reduces per layer (deterministic: Communicator + sum in rank order) keep the ranks'
// hidden states bit-identical; each rank writes its slice of the vocabulary into the logits
// rows. A rank that fails aborts the communicators, so no rank waits forever, and the group
// then refuses every later call: the model must be reloaded.
class TensorParallelBackend final : public Backend {
 public:
  // `communicators[r]` is rank r's; `runtime` is shared by the ranks (each thread selects its
  // device). `weights` must outlive the backend.
  static Expected<std::unique_ptr<TensorParallelBackend>> create(
      std::shared_ptr<DeviceRuntime> runtime, std::span<const int> devices,
      const ModelWeights& weights, const BackendOptions& options, const CudaOptions& cuda_options,
      std::vector<std::unique_ptr<Communicator>> communicators);
  ~TensorParallelBackend() override;

  std::string_view name() const override;
  std::int32_t vocab_size() const override;
  std::int32_t max_batch_tokens() const override;
  std::int32_t max_sequences() const override;
  // Per device: each rank's pool holds its KV heads of every block.
  std::uint64_t kv_block_bytes(KvCacheType type, std::int32_t block_size) const override;
  Status allocate_kv_cache(const KvCacheSpec& spec) override;
  Status copy_kv_blocks(std::span<const BlockCopy> copies) override;
  Status forward(const BatchPlan& plan, std::span<float> logits) override;
  // Device-side sampling over the ranks: each rank's top candidates of its vocabulary slice are
  // merged on the host into the row's best (the slices are disjoint, so the merge is exact);
  // the row maxima are then handed back so that every rank sums the very terms the host
  // sampler forms from the whole row, and the host adds the ranks' parts.
  std::int32_t logit_candidate_count() const override;
  // With candidates: each rank masks its columns of the rows before taking its candidates.
  bool applies_token_masks() const override;
  Status forward_with_candidates(const BatchPlan& plan, std::span<const LogitRowRequest> rows,
                                 std::span<float> logits, LogitCandidateRows& candidates) override;
  Status fetch_logit_rows(std::span<const std::int32_t> rows, std::span<float> logits) override;
  // The smallest rank's budget: every rank's pool has the same blocks.
  Expected<std::optional<std::uint64_t>> device_kv_budget(KvCacheType type,
                                                          std::int32_t block_size) override;
  // Summed over the ranks' devices.
  std::optional<DeviceMemoryUsage> device_memory() const override;
  Status health() const override;

  int ranks() const { return static_cast<int>(ranks_.size()); }
  // Rank r's own backend, for tests (call it only from outside a step).
  CudaBackend& rank(int r) { return *ranks_[static_cast<std::size_t>(r)]; }

  // Fails the next step of `rank` with `message` (tests: a rank that fails mid-group).
  void inject_failure(int rank, std::string message);

 private:
  TensorParallelBackend(std::shared_ptr<DeviceRuntime> runtime,
                        std::vector<std::unique_ptr<Communicator>> communicators);
  // Runs job(rank backend, rank) on every rank; after a failure, refuses.
  template <class Job>
  Status on_every_rank(Job&& job);

  std::shared_ptr<DeviceRuntime> runtime_;
  std::vector<std::unique_ptr<Communicator>> communicators_;
  std::vector<std::unique_ptr<CudaBackend>> ranks_;
  std::unique_ptr<RankWorkers> workers_;  // first to go: its threads use everything above
  mutable std::mutex failed_mutex_;       // health() reads failed_ from other threads
  Status failed_;                         // the first failure; the group is unusable after it
  // Device-side sampling, sized once: per rank its candidates and sums, then the merge's.
  struct RankCandidates {
    std::vector<float> values;
    std::vector<std::int32_t> ids;
    std::vector<double> exp_sum;
    std::vector<double> scaled_mass;
  };
  void allocate_candidate_buffers();
  void merge_candidates(std::size_t row, LogitCandidateRows& out);
  std::int32_t candidate_count_ = 0;
  std::vector<RankCandidates> rank_candidates_;
  std::vector<float> row_max_;
  std::vector<std::size_t> merge_heads_;  // per rank: its next candidate in the merge
  std::vector<std::string> injected_;     // per rank: a failure to report at its next step
};

}  // namespace tern::engine::cuda
