#include "engine/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/backend/cpu/cpu_batch_ops.h"
#include "engine/backend/layer_matrices.h"
#include "engine/backend/op_timing.h"
#include "engine/backend/op_trace.h"
#include "engine/model/architecture.h"
#include "engine/model/model_graph.h"
#include "engine/model/model_tables.h"
#include "kernels/cpu/kv_store.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/q8_tiles.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::engine {
// The model's graph over the CPU op table; everything architecture-neutral (the graph, the
// tables, plan validation) lives above it, so this holds only what is the CPU's own.
struct CpuBackend::State {
  State(const ModelWeights& model_weights, ModelTables model_tables,
        kernels::ThreadPool& thread_pool, const CpuBackendOptions& backend_options,
        ModelGraph model_graph)
      : weights(model_weights),
        tables(std::move(model_tables)),
        spec(GraphSpec::of(model_weights)),
        graph(model_graph),
        pool(thread_pool),
        options(backend_options),
        ops(model_weights, tables, spec.shape, thread_pool,
            CpuBuffers{backend_options.max_batch_tokens, backend_options.max_sequences,
                       backend_options.max_context}) {}

  const ModelWeights& weights;
  ModelTables tables;
  GraphSpec spec;
  ModelGraph graph;
  kernels::ThreadPool& pool;
  CpuBackendOptions options;
  CpuBatchOps ops;
  kernels::AlignedBuffer tiles;             // q8_tiles.h layouts of the matrices, one after another
  OpObserver* observer = nullptr;           // a debug aid: see Backend::observe_ops
  std::vector<OpTime>* op_times = nullptr;  // a benchmark aid: see Backend::time_ops
  ClockOpMarks op_marks;

  void repack_for_kernels();
};

// The VNNI kernels read Q8_0 / Q4_0 weights in 16-row tiles (q8_tiles.h): one repacked copy per
// matrix, the size of its row-major data, which the kernels then no longer read. All copies share
// one buffer on huge pages: decode streams through them, and with 4 KiB pages an MoE model's
// many small expert matrices reached 75-81% of the bandwidth bound against 84-86% on 2 MiB pages
// (docs/benchmarks.md).
void CpuBackend::State::repack_for_kernels() {
  const auto start = std::chrono::steady_clock::now();
  const auto tiled_bytes = [](const kernels::WeightMatrix& matrix) -> std::size_t {
    if (!kernels::uses_q8_tiles(matrix.type, kernels::active_isa())) return 0;
    const std::size_t size = kernels::q8_tiles_bytes(matrix);
    return (size + kernels::AlignedBuffer::kAlignment - 1) / kernels::AlignedBuffer::kAlignment *
           kernels::AlignedBuffer::kAlignment;
  };
  std::size_t total = 0;
  ops.for_each_matrix([&](kernels::WeightMatrix& matrix) { total += tiled_bytes(matrix); });
  if (total == 0) return;
  tiles = kernels::AlignedBuffer::with_huge_pages(total);
  std::size_t bytes = 0;
  ops.for_each_matrix([&](kernels::WeightMatrix& matrix) {
    const std::size_t size = tiled_bytes(matrix);
    if (size == 0) return;
    matrix = kernels::repack_q8_tiles(matrix, tiles.data() + bytes, pool);
    bytes += size;
  });
  if (bytes > 0) {
    spdlog::info("{}: repacked {:.1f} MiB of Q8_0/Q4_0 weights into 16-row tiles in {:.2f} s",
                 weights.path(), static_cast<double>(bytes) / (1 << 20),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

CpuBackend::CpuBackend(std::unique_ptr<State> state) : state_(std::move(state)) {}
CpuBackend::~CpuBackend() = default;

Expected<std::unique_ptr<CpuBackend>> CpuBackend::create(const ModelWeights& weights,
                                                         kernels::ThreadPool& pool,
                                                         const CpuBackendOptions& options) {
  const ModelConfig& config = weights.config();
  if (options.max_batch_tokens <= 0 || options.max_sequences <= 0) {
    return Error{"cpu backend: max_batch_tokens and max_sequences must be > 0"};
  }
  const ArchitectureInfo* architecture = find_architecture(config.architecture);
  if (architecture == nullptr || architecture->graph == nullptr) {
    return Error{fmt::format("{}: architecture '{}' has no model graph; supported: {}",
                             weights.path(), config.architecture, supported_architectures())};
  }
  if (config.moe.enabled()) {
    if (const std::optional<std::string> invalid =
            kernels::validate(CpuBatchOps::routing_of(config.moe))) {
      return Error{fmt::format("{}: expert routing: {}", weights.path(), *invalid)};
    }
  }
  auto tables = ModelTables::build(weights);
  if (!tables) return tables.error();
  CpuBackendOptions resolved = options;
  if (resolved.max_context <= 0) resolved.max_context = config.context_length;
  auto state =
      std::make_unique<State>(weights, std::move(*tables), pool, resolved, architecture->graph);
  std::optional<Error> unsupported;
  state->ops.for_each_matrix([&](const kernels::WeightMatrix& matrix) {
    if (!unsupported && !kernels::is_matmul_supported(matrix.type)) {
      unsupported = Error{fmt::format("{}: weight type {} is not supported by the CPU kernels",
                                      weights.path(), kernels::tensor_type_name(matrix.type))};
    }
  });
  if (unsupported) return *unsupported;
  state->repack_for_kernels();
  return std::unique_ptr<CpuBackend>(new CpuBackend(std::move(state)));
}

std::uint64_t CpuBackend::expert_bytes_read() const {
  return state_->ops.expert_bytes_read();
}

std::int32_t CpuBackend::vocab_size() const {
  return state_->spec.shape.vocab;
}
std::int32_t CpuBackend::max_batch_tokens() const {
  return state_->options.max_batch_tokens;
}
std::int32_t CpuBackend::max_sequences() const {
  return state_->options.max_sequences;
}

std::uint64_t CpuBackend::kv_block_bytes(KvCacheType type, std::int32_t block_size) const {
  const RankShape& shape = state_->spec.shape;
  const kernels::KvCacheLayout layout = CpuBatchOps::kv_layout(shape, type, block_size);
  // Latent attention caches one row per token and layer, with no separate V.
  const std::uint64_t pools = shape.kv_lora_rank > 0 ? 1 : 2;
  return pools * kernels::kv_block_bytes(layout) *
         static_cast<std::uint64_t>(state_->spec.n_layers);
}

Status CpuBackend::allocate_kv_cache(const KvCacheSpec& spec) {
  if (spec.num_blocks <= 0 || spec.block_size <= 0) {
    return Error{"cpu backend: the KV cache needs at least one block of at least one token"};
  }
  const RankShape& shape = state_->spec.shape;
  return state_->ops.allocate_kv_cache(CpuBatchOps::kv_layout(shape, spec.type, spec.block_size),
                                       spec.num_blocks);
}

Status CpuBackend::copy_kv_blocks(std::span<const BlockCopy> copies) {
  return state_->ops.copy_kv_blocks(copies);
}

Status CpuBackend::forward(const BatchPlan& plan, std::span<float> logits) {
  State& s = *state_;
  const BatchPlanLimits limits{s.options.max_batch_tokens, s.options.max_sequences,
                               s.options.max_context,      s.spec.shape.vocab,
                               s.ops.kv_block_size(),      s.ops.kv_blocks()};
  if (Status valid = validate_batch_plan(plan, limits, logits.size()); !valid.ok()) return valid;
  s.ops.begin(plan, logits);
  if (s.observer != nullptr) {
    ObservedBatchOps observed(s.ops, s.ops, *s.observer);
    s.graph(s.spec, observed);
    return observed.status();
  }
  if (s.op_times != nullptr) {
    TimedBatchOps timed(s.ops, s.op_marks);
    s.graph(s.spec, timed);
    return add_op_times(timed, s.op_marks, *s.op_times);
  }
  s.graph(s.spec, s.ops);
  return Status::success();
}

Status CpuBackend::time_ops(std::vector<OpTime>* times) {
  state_->op_times = times;
  return Status::success();
}

Status CpuBackend::observe_ops(OpObserver* observer) {
  state_->observer = observer;
  return Status::success();
}

}  // namespace tern::engine
