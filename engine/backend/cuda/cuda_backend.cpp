#include "engine/backend/cuda/cuda_backend.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/backend/cuda/cuda_batch_ops.h"
#include "engine/backend/cuda/decode_graphs.h"
#include "engine/backend/cuda/device_kv_cache.h"
#include "engine/backend/cuda/device_model_weights.h"
#include "engine/backend/cuda/device_plan.h"
#include "engine/backend/layer_matrices.h"
#include "engine/model/architecture.h"
#include "engine/model/model_graph.h"
#include "engine/model/model_tables.h"

namespace tern::engine::cuda {

// The model's graph over the CUDA op table. Members are destroyed in reverse order, so every
// device allocation is freed before the runtime that made it.
struct CudaBackend::State {
  std::unique_ptr<DeviceRuntime> runtime;
  int device = 0;
  Stream stream;
  GraphSpec spec;
  ModelGraph graph = nullptr;
  kernels::RopeLayout rope_layout = kernels::RopeLayout::neox;
  BackendOptions options;
  bool cuda_graphs = true;
  std::optional<DeviceModelWeights> weights;
  DeviceKvCache kv_cache;
  std::optional<CudaBatchOps> ops;
  std::optional<DevicePlan> plan;  // sized with the KV cache: its block tables need block_size
  DecodeGraphs decode_graphs;      // captured with the KV cache: they freeze its pools' addresses

  ~State() {
    decode_graphs.clear();
    plan.reset();
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

  // Runs the largest bucket (and a one-row GEMV step) eagerly over inert rows, so every kernel
  // is loaded before capture, then captures a graph per bucket.
  Status capture_decode_graphs() {
    const int largest = largest_decode_rows();
    for (int rows : {largest, 1}) {
      if (rows == 1 && largest == 1) break;
      if (Status uploaded = plan->upload(BatchPlan{}, stream, rows); !uploaded.ok()) {
        return uploaded;
      }
      const Status issued = issue_decode_rows(rows);
      if (Status done = runtime->synchronize(stream); !done.ok()) return done;
      if (!issued.ok()) return issued;
    }
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
  state->graph = architecture->graph;
  state->options = options;
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

  auto tables = ModelTables::build(weights);
  if (!tables) return tables.error();
  state->rope_layout = tables->rope_layout;
  auto uploaded = DeviceModelWeights::upload(rt, state->stream, weights, *tables);
  if (!uploaded) return uploaded.error();
  state->weights.emplace(std::move(*uploaded));

  const CudaBuffers buffers{state->options.max_batch_tokens, state->options.max_sequences,
                            state->options.max_context};
  auto ops = CudaBatchOps::create(rt, *state->weights, state->kv_cache, shape, state->rope_layout,
                                  buffers, state->stream);
  if (!ops) return ops.error();
  state->ops.emplace(std::move(*ops));
  return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(state)));
}

std::string_view CudaBackend::name() const {
  return state_->runtime->name();
}
std::int32_t CudaBackend::vocab_size() const {
  return state_->spec.shape.vocab;
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
  s.decode_graphs.clear();
  s.plan.reset();
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
  if (s.cuda_graphs) {
    if (Status captured = s.capture_decode_graphs(); !captured.ok()) {
      // Eager steps give the same logits; a graph that cannot be captured costs only speed.
      s.decode_graphs.clear();
      spdlog::warn("{}: decode steps run without CUDA graphs: {}", name, captured.message());
    }
  }
  return Status::success();
}

int CudaBackend::decode_graph_count() const {
  return state_->decode_graphs.graph_count();
}
std::int64_t CudaBackend::decode_graph_captures() const {
  return state_->decode_graphs.captures();
}

Status CudaBackend::copy_kv_blocks(std::span<const BlockCopy> copies) {
  State& s = *state_;
  if (copies.empty()) return Status::success();
  if (Status selected = s.use_device(); !selected.ok()) return selected;
  return s.kv_cache.copy_blocks(*s.runtime, copies, s.stream);
}

Status CudaBackend::forward(const BatchPlan& plan, std::span<float> logits) {
  State& s = *state_;
  const BatchPlanLimits limits{s.options.max_batch_tokens,     s.options.max_sequences,
                               s.options.max_context,          s.spec.shape.vocab,
                               s.kv_cache.layout().block_size, s.kv_cache.num_blocks()};
  if (Status valid = validate_batch_plan(plan, limits, logits.size()); !valid.ok()) return valid;
  if (!s.plan) return Error{"batch plan: forward() before allocate_kv_cache()"};
  if (Status selected = s.use_device(); !selected.ok()) return selected;
  const bool decode_only = std::ranges::all_of(
      plan.sequences, [](const SequenceChunk& c) { return c.token_count == 1; });
  const int sequences = static_cast<int>(plan.sequences.size());
  const int bucket = decode_only && sequences > 0 ? s.decode_graphs.bucket_for(sequences) : 0;
  if (Status uploaded = s.plan->upload(plan, s.stream, bucket); !uploaded.ok()) return uploaded;
  if (bucket > 0) {
    // The plan's copy above is issued on the same stream, so the graph reads this step's plan.
    if (Status launched = s.decode_graphs.launch(bucket, s.stream); !launched.ok()) {
      static_cast<void>(s.runtime->synchronize(s.stream));
      return launched;
    }
  } else {
    s.ops->begin(s.plan->view());
    s.graph(s.spec, *s.ops);
  }
  if (bucket == 0 && !s.ops->status().ok()) {
    // Whatever was issued before the failure must finish before the plan's buffers are reused.
    static_cast<void>(s.runtime->synchronize(s.stream));
    return s.ops->status();
  }
  const std::uint64_t bytes = static_cast<std::uint64_t>(s.plan->view().logit_row_count) *
                              static_cast<std::uint64_t>(s.spec.shape.vocab) * sizeof(float);
  if (bytes > 0) {
    if (Status copied = s.runtime->copy_to_host(logits.data(), s.ops->logits(), bytes, s.stream);
        !copied.ok()) {
      return copied;
    }
  }
  return s.runtime->synchronize(s.stream);
}

}  // namespace tern::engine::cuda
