#include "engine/backend/cuda/tensor_parallel_backend.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tern::engine::cuda {

TensorParallelBackend::TensorParallelBackend(
    std::shared_ptr<DeviceRuntime> runtime,
    std::vector<std::unique_ptr<Communicator>> communicators)
    : runtime_(std::move(runtime)),
      communicators_(std::move(communicators)),
      ranks_(communicators_.size()),
      injected_(communicators_.size()) {
  // A failing rank releases the others from their collectives at once.
  workers_ = std::make_unique<RankWorkers>(static_cast<int>(communicators_.size()), [this](int) {
    for (const auto& communicator : communicators_) communicator->abort();
  });
}

TensorParallelBackend::~TensorParallelBackend() {
  // Each rank's device memory, streams and graphs go on the thread that made them.
  if (workers_) {
    static_cast<void>(workers_->run([this](int rank) {
      ranks_[static_cast<std::size_t>(rank)].reset();
      return Status::success();
    }));
  }
  workers_.reset();
}

Expected<std::unique_ptr<TensorParallelBackend>> TensorParallelBackend::create(
    std::shared_ptr<DeviceRuntime> runtime, std::span<const int> devices,
    const ModelWeights& weights, const BackendOptions& options, const CudaOptions& cuda_options,
    std::vector<std::unique_ptr<Communicator>> communicators) {
  const int ranks = static_cast<int>(devices.size());
  if (ranks < 2 || static_cast<int>(communicators.size()) != ranks) {
    return Error{fmt::format(
        "{} backend: tensor parallelism needs two or more devices with a communicator each "
        "({} devices, {} communicators)",
        runtime->name(), ranks, communicators.size())};
  }
  // The shapes first, on this thread: a model that cannot be split says so before any upload.
  if (auto shape = rank_shape(weights, RankSlice{0, ranks}); !shape) return shape.error();
  std::unique_ptr<TensorParallelBackend> backend(
      new TensorParallelBackend(std::move(runtime), std::move(communicators)));
  TensorParallelBackend& tp = *backend;
  const Status created = tp.workers_->run([&](int rank) -> Status {
    const auto r = static_cast<std::size_t>(rank);
    auto made =
        CudaBackend::create_rank(tp.runtime_, devices[r], weights, options, cuda_options,
                                 RankContext{RankSlice{rank, ranks}, tp.communicators_[r].get()});
    if (!made) {
      return Error{fmt::format("rank {} (device {}): {}", rank, devices[r], made.error().message)};
    }
    tp.ranks_[r] = std::move(*made);
    return Status::success();
  });
  if (!created.ok()) return created.error();
  spdlog::info("{}: tensor parallel over {} devices, one worker thread each", tp.name(), ranks);
  return backend;
}

template <class Job>
Status TensorParallelBackend::on_every_rank(Job&& job) {
  if (Status failed = health(); !failed.ok()) {
    return Error{fmt::format("the tensor-parallel group failed earlier and must be reloaded: {}",
                             failed.message())};
  }
  Status ran = workers_->run([&](int rank) -> Status {
    std::string& injected = injected_[static_cast<std::size_t>(rank)];
    if (!injected.empty()) {
      return Error{fmt::format("rank {}: {}", rank, std::exchange(injected, std::string()))};
    }
    return job(*ranks_[static_cast<std::size_t>(rank)], rank);
  });
  if (!ran.ok()) {
    spdlog::error("{}: tensor-parallel step failed, the model must be reloaded: {}", name(),
                  ran.message());
    const std::lock_guard lock(failed_mutex_);
    failed_ = ran;
  }
  return ran;
}

Status TensorParallelBackend::health() const {
  const std::lock_guard lock(failed_mutex_);
  return failed_;
}

void TensorParallelBackend::inject_failure(int rank, std::string message) {
  injected_.at(static_cast<std::size_t>(rank)) = std::move(message);
}

std::string_view TensorParallelBackend::name() const {
  return runtime_->name();
}
std::int32_t TensorParallelBackend::vocab_size() const {
  return ranks_.front()->vocab_size();
}
std::int32_t TensorParallelBackend::max_batch_tokens() const {
  return ranks_.front()->max_batch_tokens();
}
std::int32_t TensorParallelBackend::max_sequences() const {
  return ranks_.front()->max_sequences();
}
std::uint64_t TensorParallelBackend::kv_block_bytes(KvCacheType type,
                                                    std::int32_t block_size) const {
  return ranks_.front()->kv_block_bytes(type, block_size);
}

Status TensorParallelBackend::allocate_kv_cache(const KvCacheSpec& spec) {
  // Together: the decode graphs' warm-up steps run the collectives.
  return on_every_rank([&](CudaBackend& rank, int) { return rank.allocate_kv_cache(spec); });
}

Status TensorParallelBackend::copy_kv_blocks(std::span<const BlockCopy> copies) {
  return on_every_rank([&](CudaBackend& rank, int) { return rank.copy_kv_blocks(copies); });
}

Status TensorParallelBackend::forward(const BatchPlan& plan, std::span<float> logits) {
  // Each rank writes its own columns of the rows.
  return on_every_rank([&](CudaBackend& rank, int) { return rank.forward(plan, logits); });
}

Expected<std::optional<std::uint64_t>> TensorParallelBackend::device_kv_budget(
    KvCacheType type, std::int32_t block_size) {
  std::vector<std::uint64_t> budgets(ranks_.size(), 0);
  const Status measured = on_every_rank([&](CudaBackend& rank, int r) -> Status {
    auto budget = rank.device_kv_budget(type, block_size);
    if (!budget) return budget.error();
    budgets[static_cast<std::size_t>(r)] = budget->value_or(0);
    return Status::success();
  });
  if (!measured.ok()) return measured.error();
  return std::optional<std::uint64_t>(*std::ranges::min_element(budgets));
}

std::optional<DeviceMemoryUsage> TensorParallelBackend::device_memory() const {
  DeviceMemoryUsage total;
  for (const auto& rank : ranks_) {
    const std::optional<DeviceMemoryUsage> usage = rank->device_memory();
    if (!usage) continue;
    total.device_total += usage->device_total;
    total.weights += usage->weights;
    total.activations += usage->activations;
    total.graphs += usage->graphs;
    total.kv_cache += usage->kv_cache;
  }
  return total;
}

}  // namespace tern::engine::cuda
