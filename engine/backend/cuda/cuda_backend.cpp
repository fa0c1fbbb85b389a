#include "engine/backend/cuda/cuda_backend.h"
#include "kernels/cpu/rope.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/backend/cuda/communicator.h"
#include "engine/backend/cuda/cuda_batch_ops.h"
#include "engine/backend/cuda/decode_graphs.h"
#include "engine/backend/cuda/device_kv_cache.h"
#include "engine/backend/cuda/device_logit_candidates.h"
#include "engine/backend/cuda/device_model_weights.h"
#include "engine/backend/cuda/device_op_marks.h"
#include "engine/backend/cuda/device_plan.h"
#include "engine/backend/layer_matrices.h"
#include "engine/backend/op_timing.h"
#include "engine/model/architecture.h"
#include "engine/model/model_graph.h"
#include "engine/model/model_tables.h"

namespace tern::engine::cuda {
namespace {

// For the startup log: MiB below a GiB, GiB above.
std::string readable_bytes(std::uint64_t bytes) {
  const auto value = static_cast<double>(bytes);
  if (bytes < (1ull << 30)) return fmt::format("{:.1f} MiB", value / (1 << 20));
  return fmt::format("{:.2f} GiB", value / (1 << 30));
}

}  // namespace

// The model's graph over the CUDA op table. Members are destroyed in reverse order, so every
// device allocation is freed before the runtime that made it.
struct CudaBackend::State {
  std::shared_ptr<DeviceRuntime> runtime;  // shared by the ranks of a tensor-parallel group
  int device = 0;
  RankContext rank;
  std::int32_t whole_vocab = 0;   // the logits rows' width; spec.shape.vocab is this rank's slice
  std::int32_t vocab_offset = 0;  // where this rank's slice starts in a row
  Stream stream;
  GraphSpec spec;
  ModelGraph graph = nullptr;
  kernels::RopeLayout rope_layout = kernels::RopeLayout::neox;
  BackendOptions options;
  CudaOptions cuda_options;
  bool cuda_graphs = true;
  DeviceMemoryUsage memory;         // weights and activations from create(), the rest per pool
  std::uint64_t free_at_start = 0;  // before the weights: what the runtime reported
  std::optional<DeviceModelWeights> weights;
  DeviceKvCache kv_cache;
  std::optional<CudaBatchOps> ops;
  std::optional<DeviceLogitCandidates> logit_candidates;  // empty: sample_on_device off
  int last_logit_rows = 0;
  int last_tokens = 0;             // of the last forward pass: fetch_logit_rows may read them
  std::optional<DevicePlan> plan;  // sized with the KV cache: its block tables need block_size
  DecodeGraphs decode_graphs;      // captured with the KV cache: they freeze its pools' addresses
  bool kernels_loaded = false;     // the decode steps ran eagerly once, before the first capture
  OpObserver* observer = nullptr;  // a debug aid: see Backend::observe_ops
  std::vector<OpTime>* op_times = nullptr;  // a benchmark aid: see Backend::time_ops
  std::optional<DeviceOpMarks> op_marks;    // made at the first timed pass

  ~State() {
    decode_graphs.clear();
    plan.reset();
    logit_candidates.reset();
    ops.reset();
    kv_cache = DeviceKvCache();
    weights.reset();
    if (runtime && stream.handle != nullptr) runtime->destroy_stream(stream);
  }

  // The engine may call from another thread than the one that built the backend.
  Status use_device() { return runtime->set_device(device); }

  // The largest decode graph: a step of one token per sequence, within both limits.
  int largest_decode_rows() const {
    return std::min(options.max_sequences, options.max_batch_tokens);
  }

  // Issues a decode step over the plan's first `rows` rows as a graph replays it: the launch
  // shapes are the bucket's and attention's context bound is max_context, so every value that
  // changes from step to step is read from the plan's device buffers.
  Status issue_decode_rows(int rows) {
    DevicePlanView view = plan->view();
    view.tokens = rows;
    view.sequences = rows;
    view.logit_row_count = rows;
    view.max_query_length = 1;
    view.max_context_length = options.max_context;
    view.decode_only = true;
    ops->begin(view);
    graph(spec, *ops);
    return ops->status();
  }

  Status issue_forward(const BatchPlan& batch, std::size_t logits_size);
  Status copy_row(int row, std::span<float> logits);
  // After issue_forward: the copies of the rows `rows` asks for whole.
  Status copy_whole_rows(std::span<const LogitRowRequest> rows, std::span<float> logits);

  // Runs the largest bucket (and a one-row GEMV step) eagerly over inert rows, so every kernel
  // is loaded before capture, then captures a graph per bucket.
  Status capture_decode_graphs() {
    const int largest = largest_decode_rows();
    // Once per backend: a recapture (a new KV pool) finds every kernel loaded.
    for (int rows : {largest, 1}) {
      if (kernels_loaded || (rows == 1 && largest == 1)) break;
      if (Status uploaded = plan->upload(BatchPlan{}, stream, rows); !uploaded.ok()) {
        return uploaded;
      }
      const Status issued = issue_decode_rows(rows);
      if (Status done = runtime->synchronize(stream); !done.ok()) return done;
      if (!issued.ok()) return issued;
    }
    kernels_loaded = true;
    return decode_graphs.capture(*runtime, stream, largest,
                                 [this](int rows) { return issue_decode_rows(rows); });
  }
};

CudaBackend::CudaBackend(std::unique_ptr<State> state) : state_(std::move(state)) {}
CudaBackend::~CudaBackend() = default;

Expected<std::unique_ptr<CudaBackend>> CudaBackend::create(std::unique_ptr<DeviceRuntime> runtime,
                                                           int device, const ModelWeights& weights,
                                                           const BackendOptions& options,
                                                           const CudaOptions& cuda_options) {
  return create_rank(std::shared_ptr<DeviceRuntime>(std::move(runtime)), device, weights, options,
                     cuda_options, RankContext{});
}

Expected<std::unique_ptr<CudaBackend>> CudaBackend::create_rank(
    std::shared_ptr<DeviceRuntime> runtime, int device, const ModelWeights& weights,
    const BackendOptions& options, const CudaOptions& cuda_options, const RankContext& rank) {
  const ModelConfig& config = weights.config();
  const std::string_view name = runtime->name();
  if (options.max_batch_tokens <= 0 || options.max_sequences <= 0) {
    return Error{fmt::format("{} backend: max_batch_tokens and max_sequences must be > 0", name)};
  }
  const ArchitectureInfo* architecture = find_architecture(config.architecture);
  if (architecture == nullptr || architecture->graph == nullptr) {
    return Error{fmt::format("{}: architecture '{}' has no model graph; supported: {}",
                             weights.path(), config.architecture, supported_architectures())};
  }
  auto state = std::make_unique<State>();
  state->runtime = std::move(runtime);
  state->device = device;
  state->spec = GraphSpec::of(weights);
  state->rank = rank;
  state->whole_vocab = state->spec.shape.vocab;
  if (rank.slice.ranks > 1) {
    if (rank.communicator == nullptr || rank.communicator->ranks() != rank.slice.ranks ||
        rank.communicator->rank() != rank.slice.rank) {
      return Error{fmt::format("{} backend: rank {} of {} needs that rank's communicator", name,
                               rank.slice.rank, rank.slice.ranks)};
    }
    auto sliced = rank_shape(weights, rank.slice);
    if (!sliced) return sliced.error();
    state->spec.shape = *sliced;
    state->vocab_offset = rank.slice.rank * sliced->vocab;
  }
  if (kernels::rope_attention_factor(config.rope_scaling) != 1.0 ||
      kernels::rope_softmax_scale_multiplier(config.rope_scaling) != 1.0) {
    return Error{fmt::format(
        "{}: the {} backend's RoPE and attention kernels do not apply YaRN's attention factors "
        "yet; serve this model with backend cpu",
        weights.path(), name)};
  }
  if (config.moe.enabled() || config.latent.enabled()) {
    return Error{fmt::format(
        "{}: the {} backend has no {} kernels yet (the router, the grouped expert matmul and "
        "latent attention run on the CPU backend only); serve this {} model with backend cpu",
        weights.path(), name,
        config.latent.enabled() ? "latent-attention and mixture-of-experts" : "mixture-of-experts",
        config.architecture)};
  }
  state->graph = architecture->graph;
  state->options = options;
  state->cuda_options = cuda_options;
  state->cuda_graphs = cuda_options.cuda_graphs;
  if (state->options.max_context <= 0) state->options.max_context = config.context_length;
  DeviceRuntime& rt = *state->runtime;
  const RankShape& shape = state->spec.shape;
  if (!rt.kernels().paged_attention_supports_head_dim(shape.head_dim)) {
    return Error{fmt::format(
        "{}: head_dim {} has no CUDA attention kernel (compiled for 16, 24, 32, 40, 64, 80, 96 "
        "and 128)",
        weights.path(), shape.head_dim)};
  }
  if (shape.n_kv_heads <= 0 || shape.n_heads % shape.n_kv_heads != 0) {
    return Error{fmt::format("{}: {} query heads do not share {} KV heads evenly", weights.path(),
                             shape.n_heads, shape.n_kv_heads)};
  }
  if (Status selected = state->use_device(); !selected.ok()) return selected.error();
  auto stream = rt.create_stream();
  if (!stream) return stream.error();
  state->stream = *stream;

  // Each stage's share of the device, from the free memory the runtime reports around it.
  auto free_bytes = [&rt]() -> std::uint64_t {
    const auto info = rt.memory_info();
    return info ? info->free_bytes : 0;
  };
  if (const auto info = rt.memory_info(); info) {
    state->memory.device_total = info->total_bytes;
    state->free_at_start = info->free_bytes;
  }
  auto tables = ModelTables::build(weights);
  if (!tables) return tables.error();
  state->rope_layout = tables->rope_layout;
  auto uploaded = DeviceModelWeights::upload(rt, state->stream, weights, *tables, rank.slice);
  if (!uploaded) return uploaded.error();
  state->weights.emplace(std::move(*uploaded));
  state->memory.weights = state->weights->bytes();
  const std::uint64_t free_before_activations = free_bytes();

  const CudaBuffers buffers{state->options.max_batch_tokens, state->options.max_sequences,
                            state->options.max_context};
  auto ops = CudaBatchOps::create(rt, *state->weights, state->kv_cache, shape, state->rope_layout,
                                  buffers, state->stream, rank.communicator);
  if (!ops) return ops.error();
  state->ops.emplace(std::move(*ops));
  // A rank's candidates are of its slice of each row; TensorParallelBackend merges them.
  if (cuda_options.sample_on_device) {
    auto candidates = DeviceLogitCandidates::create(rt, state->options.max_sequences, shape.vocab,
                                                    state->whole_vocab, state->vocab_offset);
    if (!candidates) return candidates.error();
    state->logit_candidates.emplace(std::move(*candidates));
  }
  state->memory.activations = free_before_activations - free_bytes();
  return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(state)));
}

std::string_view CudaBackend::name() const {
  return state_->runtime->name();
}
std::int32_t CudaBackend::vocab_size() const {
  return state_->whole_vocab;
}
std::int32_t CudaBackend::max_batch_tokens() const {
  return state_->options.max_batch_tokens;
}
std::int32_t CudaBackend::max_sequences() const {
  return state_->options.max_sequences;
}

std::uint64_t CudaBackend::kv_block_bytes(KvCacheType type, std::int32_t block_size) const {
  const RankShape& shape = state_->spec.shape;
  const kernels::KvCacheLayout layout{type, block_size, shape.n_kv_heads, shape.head_dim};
  return kv_block_bytes_all_layers(layout, state_->spec.n_layers);
}

Status CudaBackend::allocate_kv_cache(const KvCacheSpec& spec) {
  State& s = *state_;
  const std::string_view name = s.runtime->name();
  if (spec.num_blocks <= 0 || spec.block_size <= 0) {
    return Error{fmt::format(
        "{} backend: the KV cache needs at least one block of at least one token", name)};
  }
  if (spec.type != KvCacheType::f16 && spec.type != KvCacheType::bf16) {
    return Error{
        fmt::format("{} backend: kv_cache_dtype f32 is not supported: the CUDA kernels "
                    "take f16 and bf16 KV caches",
                    name)};
  }
  if (Status selected = s.use_device(); !selected.ok()) return selected;
  s.last_logit_rows = 0;  // the warm-up below writes the logits buffer
  s.decode_graphs.clear();
  s.plan.reset();
  s.memory.kv_cache = 0;
  s.memory.graphs = 0;
  const RankShape& shape = s.spec.shape;
  const kernels::KvCacheLayout layout{spec.type, spec.block_size, shape.n_kv_heads, shape.head_dim};
  if (Status allocated =
          s.kv_cache.allocate(*s.runtime, s.stream, s.spec.n_layers, layout, spec.num_blocks);
      !allocated.ok()) {
    return allocated;
  }
  const int blocks_per_sequence = (s.options.max_context + spec.block_size - 1) / spec.block_size;
  auto plan = DevicePlan::create(*s.runtime, s.options.max_batch_tokens, s.options.max_sequences,
                                 blocks_per_sequence, spec.block_size);
  if (!plan) {
    s.kv_cache = DeviceKvCache();  // no forward pass without both
    return plan.error();
  }
  s.plan.emplace(std::move(*plan));
  s.memory.kv_cache = s.kv_cache.bytes();
  const auto before_graphs = s.runtime->memory_info();
  if (s.cuda_graphs) {
    if (Status captured = s.capture_decode_graphs(); !captured.ok()) {
      // Eager steps give the same logits; a graph that cannot be captured costs only speed.
      s.decode_graphs.clear();
      spdlog::warn("{}: decode steps run without CUDA graphs: {}", name, captured.message());
    }
  }
  if (const auto after_graphs = s.runtime->memory_info(); before_graphs && after_graphs) {
    s.memory.graphs = before_graphs->free_bytes > after_graphs->free_bytes
                          ? before_graphs->free_bytes - after_graphs->free_bytes
                          : 0;
  }
  return Status::success();
}

Expected<std::optional<std::uint64_t>> CudaBackend::device_kv_budget(KvCacheType type,
                                                                     std::int32_t block_size) {
  State& s = *state_;
  const std::string_view name = s.runtime->name();
  // The smallest pool, so that the graphs (and the plan sized with it) are measured as they
  // will be with the real one.
  if (Status probed = allocate_kv_cache({type, block_size, 1}); !probed.ok()) return probed.error();
  const auto info = s.runtime->memory_info();
  if (!info) return info.error();
  const std::uint64_t probe_pool = s.memory.kv_cache;
  // The plan is sized with the pool; it counts with the activations from here on.
  const std::uint64_t in_use = s.free_at_start > info->free_bytes + probe_pool
                                   ? s.free_at_start - info->free_bytes - probe_pool
                                   : 0;
  const double utilization = s.cuda_options.gpu_memory_utilization;
  const auto allowed =
      static_cast<std::uint64_t>(utilization * static_cast<double>(info->total_bytes));
  // Each layer's K and V pool starts aligned: a few hundred bytes each beyond the blocks.
  const std::uint64_t alignment_slack = (2 * static_cast<std::uint64_t>(s.spec.n_layers) + 1) * 256;
  const std::uint64_t block_bytes = kv_block_bytes(type, block_size);
  if (allowed < in_use + alignment_slack + block_bytes) {
    return Error{fmt::format(
        "{}: gpu_memory_utilization {} of device {}'s {} bytes is {} bytes, and the weights "
        "({}), activations ({}) and decode graphs ({}) already take {}: no room for the KV "
        "cache; raise gpu_memory_utilization, or lower max_num_seqs or max_num_batched_tokens",
        name, utilization, s.device, info->total_bytes, allowed, s.memory.weights,
        in_use - s.memory.weights - s.memory.graphs, s.memory.graphs, in_use)};
  }
  std::uint64_t budget = allowed - in_use - alignment_slack;
  const std::uint64_t free_for_pool = info->free_bytes + probe_pool;
  if (budget > free_for_pool) {
    spdlog::warn(
        "{}: device {} has {} bytes free, less than the {} bytes gpu_memory_utilization {} "
        "leaves for the KV cache (another process holds memory): the KV cache takes what is free",
        name, s.device, free_for_pool, budget, utilization);
    budget = free_for_pool > alignment_slack ? free_for_pool - alignment_slack : 0;
  }
  spdlog::info(
      "{}: device {}: {}; gpu_memory_utilization {} allows {}: weights {}, activations {}, "
      "decode graphs {}, KV cache {} ({} blocks of {} tokens)",
      name, s.device, readable_bytes(info->total_bytes), utilization, readable_bytes(allowed),
      readable_bytes(s.memory.weights), readable_bytes(in_use - s.memory.weights - s.memory.graphs),
      readable_bytes(s.memory.graphs), readable_bytes(budget),
      budget / std::max<std::uint64_t>(block_bytes, 1), block_size);
  return std::optional<std::uint64_t>(budget);
}

std::optional<DeviceMemoryUsage> CudaBackend::device_memory() const {
  DeviceMemoryUsage usage = state_->memory;
  // The plan and the pool are sized together; the plan counts with the activations.
  if (state_->plan) usage.activations += state_->plan->bytes();
  return usage;
}

Expected<std::vector<float>> CudaBackend::hidden_states() {
  State& s = *state_;
  if (Status selected = s.use_device(); !selected.ok()) return selected.error();
  std::vector<float> out(static_cast<std::size_t>(s.last_tokens) *
                         static_cast<std::size_t>(s.spec.shape.hidden));
  if (out.empty()) return out;
  if (Status copied = s.runtime->copy_to_host(out.data(), s.ops->hidden_states(),
                                              out.size() * sizeof(float), s.stream);
      !copied.ok()) {
    return copied.error();
  }
  if (Status done = s.runtime->synchronize(s.stream); !done.ok()) return done.error();
  return out;
}

int CudaBackend::decode_graph_count() const {
  return state_->decode_graphs.graph_count();
}
std::int64_t CudaBackend::decode_graph_captures() const {
  return state_->decode_graphs.captures();
}
std::int64_t CudaBackend::decode_graph_replays() const {
  return state_->decode_graphs.replays();
}

Status CudaBackend::copy_kv_blocks(std::span<const BlockCopy> copies) {
  State& s = *state_;
  if (copies.empty()) return Status::success();
  if (Status selected = s.use_device(); !selected.ok()) return selected;
  return s.kv_cache.copy_blocks(*s.runtime, copies, s.stream);
}

// Validates the plan and issues its forward pass: a decode graph's replay or eager launches.
Status CudaBackend::State::issue_forward(const BatchPlan& batch, std::size_t logits_size) {
  const BatchPlanLimits limits{options.max_batch_tokens,     options.max_sequences,
                               options.max_context,          whole_vocab,
                               kv_cache.layout().block_size, kv_cache.num_blocks()};
  if (Status valid = validate_batch_plan(batch, limits, logits_size); !valid.ok()) return valid;
  if (!plan) return Error{"batch plan: forward() before allocate_kv_cache()"};
  if (Status selected = use_device(); !selected.ok()) return selected;
  last_logit_rows = 0;
  const bool decode_only = std::ranges::all_of(
      batch.sequences, [](const SequenceChunk& c) { return c.token_count == 1; });
  const int sequences = static_cast<int>(batch.sequences.size());
  const bool traced = observer != nullptr || op_times != nullptr;
  const int bucket =
      decode_only && sequences > 0 && !traced ? decode_graphs.bucket_for(sequences) : 0;
  if (Status uploaded = plan->upload(batch, stream, bucket); !uploaded.ok()) return uploaded;
  if (bucket > 0) {
    // The plan's copy above is issued on the same stream, so the graph reads this step's plan.
    if (Status launched = decode_graphs.launch(bucket, stream); !launched.ok()) {
      static_cast<void>(runtime->synchronize(stream));
      return launched;
    }
  } else {
    ops->begin(plan->view());
    Status observed = Status::success();
    if (observer != nullptr) {
      ObservedBatchOps observed_ops(*ops, *ops, *observer);
      graph(spec, observed_ops);
      observed = observed_ops.status();
    } else if (op_times != nullptr) {
      if (!op_marks) op_marks.emplace(*runtime, stream);
      TimedBatchOps timed_ops(*ops, *op_marks);
      graph(spec, timed_ops);
      observed = op_marks->status();
      if (observed.ok() && ops->status().ok()) observed = runtime->synchronize(stream);
      if (observed.ok() && ops->status().ok())
        observed = add_op_times(timed_ops, *op_marks, *op_times);
    } else {
      graph(spec, *ops);
    }
    if (!ops->status().ok() || !observed.ok()) {
      // Whatever was issued before the failure must finish before the plan's buffers are reused.
      static_cast<void>(runtime->synchronize(stream));
      return ops->status().ok() ? observed : ops->status();
    }
  }
  last_logit_rows = plan->view().logit_row_count;
  last_tokens = plan->view().tokens;
  return Status::success();
}

// Issues the copy of this rank's part of logits row `row` (of the last forward pass) to
// logits[row * whole_vocab + vocab_offset].
Status CudaBackend::State::copy_row(int row, std::span<float> logits) {
  const auto slice = static_cast<std::uint64_t>(spec.shape.vocab);
  const auto at = static_cast<std::uint64_t>(row);
  return runtime->copy_to_host(
      logits.data() + at * static_cast<std::uint64_t>(whole_vocab) + vocab_offset,
      ops->logits() + at * slice, slice * sizeof(float), stream);
}

Status CudaBackend::State::copy_whole_rows(std::span<const LogitRowRequest> rows,
                                           std::span<float> logits) {
  if (rows.size() != static_cast<std::size_t>(last_logit_rows)) {
    return Error{
        fmt::format("batch plan: {} logits rows, {} row requests", last_logit_rows, rows.size())};
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].full_row) continue;
    if (Status copied = copy_row(static_cast<int>(r), logits); !copied.ok()) return copied;
  }
  return Status::success();
}

Status CudaBackend::forward(const BatchPlan& plan, std::span<float> logits) {
  State& s = *state_;
  if (Status issued = s.issue_forward(plan, logits.size()); !issued.ok()) return issued;
  Status copied = Status::success();
  if (s.rank.slice.ranks == 1) {  // the rows are contiguous: one copy
    const std::uint64_t bytes = static_cast<std::uint64_t>(s.last_logit_rows) *
                                static_cast<std::uint64_t>(s.whole_vocab) * sizeof(float);
    if (bytes > 0)
      copied = s.runtime->copy_to_host(logits.data(), s.ops->logits(), bytes, s.stream);
  } else {
    for (int row = 0; row < s.last_logit_rows && copied.ok(); ++row) {
      copied = s.copy_row(row, logits);
    }
  }
  const Status done = s.runtime->synchronize(s.stream);
  return copied.ok() ? done : copied;
}

Status CudaBackend::observe_ops(OpObserver* observer) {
  state_->observer = observer;
  return Status::success();
}

Status CudaBackend::time_ops(std::vector<OpTime>* times) {
  state_->op_times = times;
  return Status::success();
}

std::int32_t CudaBackend::logit_candidate_count() const {
  const State& s = *state_;
  return s.logit_candidates && s.rank.slice.ranks == 1 ? s.logit_candidates->count() : 0;
}

bool CudaBackend::applies_token_masks() const {
  return logit_candidate_count() > 0;
}

std::int32_t CudaBackend::slice_candidate_count() const {
  return state_->logit_candidates ? state_->logit_candidates->count() : 0;
}

std::int32_t CudaBackend::vocab_offset() const {
  return state_->vocab_offset;
}

Status CudaBackend::forward_slice_candidates(const BatchPlan& plan,
                                             std::span<const LogitRowRequest> rows,
                                             std::span<float> logits, std::span<float> values,
                                             std::span<std::int32_t> ids) {
  State& s = *state_;
  if (!s.logit_candidates) return Error{"forward_slice_candidates: sample_on_device is off"};
  if (Status issued = s.issue_forward(plan, logits.size()); !issued.ok()) return issued;
  Status copied =
      s.logit_candidates->issue_token_masks(s.ops->logits(), s.last_logit_rows, rows, s.stream);
  if (copied.ok()) copied = s.copy_whole_rows(rows, logits);
  if (copied.ok()) {
    copied = s.logit_candidates->issue_slice_candidates(s.ops->logits(), s.last_logit_rows, values,
                                                        ids, s.stream);
  }
  const Status done = s.runtime->synchronize(s.stream);
  return copied.ok() ? done : copied;
}

Status CudaBackend::slice_sums(std::span<const LogitRowRequest> rows,
                               std::span<const float> row_max, std::span<double> exp_sum,
                               std::span<double> scaled_mass) {
  State& s = *state_;
  if (!s.logit_candidates) return Error{"slice_sums: sample_on_device is off"};
  if (Status selected = s.use_device(); !selected.ok()) return selected;
  if (rows.size() != static_cast<std::size_t>(s.last_logit_rows)) {
    return Error{
        fmt::format("slice_sums: {} rows, the last pass had {}", rows.size(), s.last_logit_rows)};
  }
  const Status issued = s.logit_candidates->issue_slice_sums(s.ops->logits(), rows, row_max,
                                                             exp_sum, scaled_mass, s.stream);
  const Status done = s.runtime->synchronize(s.stream);
  return issued.ok() ? done : issued;
}

Status CudaBackend::forward_with_candidates(const BatchPlan& plan,
                                            std::span<const LogitRowRequest> rows,
                                            std::span<float> logits,
                                            LogitCandidateRows& candidates) {
  State& s = *state_;
  // A rank's candidates are of its slice: TensorParallelBackend asks it for those itself.
  if (!s.logit_candidates || s.rank.slice.ranks > 1) return forward(plan, logits);
  if (Status issued = s.issue_forward(plan, logits.size()); !issued.ok()) return issued;
  // The masks first: the candidates, the sums and any row copied whole are the masked row's.
  Status copied =
      s.logit_candidates->issue_token_masks(s.ops->logits(), s.last_logit_rows, rows, s.stream);
  if (copied.ok()) copied = s.copy_whole_rows(rows, logits);
  if (copied.ok()) copied = s.logit_candidates->issue(s.ops->logits(), rows, candidates, s.stream);
  const Status done = s.runtime->synchronize(s.stream);
  return copied.ok() ? done : copied;
}

Status CudaBackend::fetch_logit_rows(std::span<const std::int32_t> rows, std::span<float> logits) {
  State& s = *state_;
  if (rows.empty()) return Status::success();
  if (Status selected = s.use_device(); !selected.ok()) return selected;
  const auto vocab = static_cast<std::size_t>(s.whole_vocab);
  Status copied = Status::success();
  for (const std::int32_t row : rows) {
    if (row < 0 || row >= s.last_logit_rows ||
        (static_cast<std::size_t>(row) + 1) * vocab > logits.size()) {
      copied = Error{fmt::format("fetch_logit_rows: row {} of the last pass's {} (room for {})",
                                 row, s.last_logit_rows, logits.size() / vocab)};
      break;
    }
    if (copied = s.copy_row(row, logits); !copied.ok()) break;
  }
  const Status done = s.runtime->synchronize(s.stream);
  return copied.ok() ? done : copied;
}

}  // namespace tern::engine::cuda
