#include "engine/backend/cuda/tensor_parallel_backend.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/logit_candidates.h"

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
  tp.allocate_candidate_buffers();
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

void TensorParallelBackend::allocate_candidate_buffers() {
  for (const auto& rank : ranks_) {
    if (rank->slice_candidate_count() == 0) return;  // sample_on_device off: whole rows
  }
  candidate_count_ = std::min(kMaxLogitCandidates, vocab_size());
  const auto rows = static_cast<std::size_t>(max_sequences());
  rank_candidates_.resize(ranks_.size());
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const auto count = static_cast<std::size_t>(ranks_[r]->slice_candidate_count());
    rank_candidates_[r].values.resize(rows * count);
    rank_candidates_[r].ids.resize(rows * count);
    rank_candidates_[r].exp_sum.resize(rows);
    rank_candidates_[r].scaled_mass.resize(rows);
  }
  row_max_.resize(rows);
  merge_heads_.resize(ranks_.size());
}

std::int32_t TensorParallelBackend::logit_candidate_count() const {
  return candidate_count_;
}

bool TensorParallelBackend::applies_token_masks() const {
  return candidate_count_ > 0;
}

namespace {

// The order of logits_select.h: any NaN first, then larger values, equal values by lower id.
bool ranks_before(float a, std::int32_t a_id, float b, std::int32_t b_id) {
  if (std::isnan(a) != std::isnan(b)) return std::isnan(a);
  if (a != b && !std::isnan(a)) return a > b;
  return a_id < b_id;
}

}  // namespace

// Row `row`'s candidates: the best candidate_count_ of the ranks' lists, each already in order,
// with their ids made whole-vocabulary ones. Every token of the row is in some rank's slice, and
// each rank's list is its slice's best, so the merged head is the row's best.
void TensorParallelBackend::merge_candidates(std::size_t row, LogitCandidateRows& out) {
  std::ranges::fill(merge_heads_, 0);
  const auto count = static_cast<std::size_t>(candidate_count_);
  for (std::size_t c = 0; c < count; ++c) {
    std::size_t best_rank = ranks_.size();
    float best_value = 0;
    std::int32_t best_id = 0;
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      const auto per_rank = static_cast<std::size_t>(ranks_[r]->slice_candidate_count());
      if (merge_heads_[r] == per_rank) continue;
      const std::size_t at = row * per_rank + merge_heads_[r];
      const float value = rank_candidates_[r].values[at];
      const std::int32_t id = rank_candidates_[r].ids[at] + ranks_[r]->vocab_offset();
      if (best_rank == ranks_.size() || ranks_before(value, id, best_value, best_id)) {
        best_rank = r;
        best_value = value;
        best_id = id;
      }
    }
    ++merge_heads_[best_rank];
    out.values[row * count + c] = best_value;
    out.ids[row * count + c] = best_id;
  }
}

Status TensorParallelBackend::forward_with_candidates(const BatchPlan& plan,
                                                      std::span<const LogitRowRequest> rows,
                                                      std::span<float> logits,
                                                      LogitCandidateRows& candidates) {
  if (candidate_count_ == 0) return forward(plan, logits);
  const Status ran = on_every_rank([&](CudaBackend& rank, int r) {
    RankCandidates& mine = rank_candidates_[static_cast<std::size_t>(r)];
    return rank.forward_slice_candidates(plan, rows, logits, mine.values, mine.ids);
  });
  if (!ran.ok()) return ran;
  // Every row's maximum over the ranks, as the host's std::max passes a NaN over.
  for (std::size_t row = 0; row < rows.size(); ++row) {
    float largest = -std::numeric_limits<float>::infinity();
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      const auto per_rank = static_cast<std::size_t>(ranks_[r]->slice_candidate_count());
      largest = std::max(largest, rank_candidates_[r].values[row * per_rank]);
    }
    row_max_[row] = largest;
    merge_candidates(row, candidates);
  }
  const Status summed = on_every_rank([&](CudaBackend& rank, int r) {
    RankCandidates& mine = rank_candidates_[static_cast<std::size_t>(r)];
    return rank.slice_sums(rows, std::span<const float>(row_max_).first(rows.size()), mine.exp_sum,
                           mine.scaled_mass);
  });
  if (!summed.ok()) return summed;
  // The host's forms, from the ranks' parts of the same terms added in rank order.
  for (std::size_t row = 0; row < rows.size(); ++row) {
    double total = 0;
    double mass = 0;
    for (const RankCandidates& rank : rank_candidates_) {
      total += rank.exp_sum[row];
      mass += rank.scaled_mass[row];
    }
    candidates.log_sum_exp[row] = static_cast<float>(std::log(total)) + row_max_[row];
    candidates.scaled_mass[row] = mass;
  }
  candidates.scaled_mass_relative_error =
      runtime_->kernels().logit_row_sums_relative_error(vocab_size());
  return Status::success();
}

Status TensorParallelBackend::fetch_logit_rows(std::span<const std::int32_t> rows,
                                               std::span<float> logits) {
  // Each rank copies its columns of the rows.
  return on_every_rank([&](CudaBackend& rank, int) { return rank.fetch_logit_rows(rows, logits); });
}

}  // namespace tern::engine::cuda
