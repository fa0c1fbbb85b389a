#include "engine/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/kv_store.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/q8_tiles.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::engine {
namespace {

struct AlignedFree {
  void operator()(std::byte* memory) const { std::free(memory); }
};
using AlignedBytes = std::unique_ptr<std::byte[], AlignedFree>;

AlignedBytes allocate_aligned(std::size_t bytes) {
  constexpr std::size_t kAlignment = 64;
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return AlignedBytes(static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded)));
}

kernels::WeightMatrix matrix_of(const WeightTensor& tensor) {
  return kernels::WeightMatrix{tensor.type, tensor.data, tensor.rows, tensor.cols,
                               tensor.row_bytes};
}

// Small 1-D weights (norms, biases) in f32, whatever their stored type.
std::vector<float> to_f32(const WeightTensor& tensor) {
  std::vector<float> values(static_cast<std::size_t>(tensor.rows * tensor.cols));
  kernels::dequantize_row(tensor.type, tensor.data, values.data(),
                          static_cast<std::int64_t>(values.size()));
  return values;
}

struct LayerState {
  std::vector<float> attn_norm, ffn_norm, bq, bk, bv, q_norm, k_norm;
  kernels::WeightMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
  AlignedBytes k_pool, v_pool;
};

}  // namespace

struct CpuBackend::State {
  State(const ModelWeights& model_weights, kernels::ThreadPool& thread_pool,
        const CpuBackendOptions& backend_options)
      : weights(model_weights),
        config(model_weights.config()),
        pool(thread_pool),
        options(backend_options),
        workspace(backend_options.max_batch_tokens,
                  std::max<std::int64_t>(
                      {model_weights.config().hidden_size, model_weights.config().ffn_hidden_size,
                       static_cast<std::int64_t>(model_weights.config().n_heads) *
                           model_weights.config().head_dim})) {}

  const ModelWeights& weights;
  const ModelConfig& config;
  kernels::ThreadPool& pool;
  CpuBackendOptions options;
  kernels::MatmulWorkspace workspace;

  std::vector<LayerState> layers;
  std::vector<kernels::AlignedBuffer> tile_copies;  // q8_tiles.h layouts of the matrices
  std::vector<float> output_norm;
  kernels::WeightMatrix output{};
  std::vector<float> inverse_frequencies;
  kernels::RopeLayout rope_layout = kernels::RopeLayout::neox;

  kernels::KvCacheLayout kv_layout{};
  std::int32_t kv_blocks = 0;

  // Activations, [tokens][width], sized for options.max_batch_tokens.
  std::vector<float> x, normed, q, k, v, attention, projected, gate, up, last_rows;
  std::vector<kernels::AttentionScratch> attention_scratch;

  std::int64_t q_width() const { return std::int64_t{config.n_heads} * config.head_dim; }
  std::int64_t kv_width() const { return std::int64_t{config.n_kv_heads} * config.head_dim; }

  Status validate(const BatchPlan& plan, std::span<float> logits) const;
  void embed(const BatchPlan& plan);
  void run_layer(const BatchPlan& plan, LayerState& layer);
  void attend(const BatchPlan& plan, LayerState& layer);
  void norm_rows(const float* in, const float* weight, float* out, std::int64_t rows,
                 std::int64_t cols);
  void add_bias(float* rows, std::int64_t count, std::int64_t width,
                const std::vector<float>& bias);
  void repack_for_kernels();
};

// The VNNI kernels read Q8_0 / Q4_0 weights in 16-row tiles (q8_tiles.h): one repacked copy per
// matrix, the size of its row-major data, which the kernels then no longer read.
void CpuBackend::State::repack_for_kernels() {
  const auto start = std::chrono::steady_clock::now();
  std::size_t bytes = 0;
  auto repack = [&](kernels::WeightMatrix& matrix) {
    if (!kernels::uses_q8_tiles(matrix.type, kernels::active_isa())) return;
    const std::size_t size = kernels::q8_tiles_bytes(matrix);
    if (size == 0) return;
    tile_copies.emplace_back(size);
    matrix = kernels::repack_q8_tiles(matrix, tile_copies.back().data(), pool);
    bytes += size;
  };
  for (LayerState& layer : layers) {
    for (kernels::WeightMatrix* matrix :
         {&layer.wq, &layer.wk, &layer.wv, &layer.wo, &layer.w_gate, &layer.w_up, &layer.w_down}) {
      repack(*matrix);
    }
  }
  repack(output);
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
  const WeightTensor* matmul_weights[] = {&weights.output()};
  for (const WeightTensor* tensor : matmul_weights) {
    if (!kernels::is_matmul_supported(tensor->type)) {
      return Error{fmt::format("{}: output weight type {} is not supported by the CPU kernels",
                               weights.path(), kernels::tensor_type_name(tensor->type))};
    }
  }
  auto state = std::make_unique<State>(weights, pool, options);
  for (const LayerWeights& source : weights.layers()) {
    for (const WeightTensor* tensor : {&source.wq, &source.wk, &source.wv, &source.wo,
                                       &source.w_gate, &source.w_up, &source.w_down}) {
      if (!kernels::is_matmul_supported(tensor->type)) {
        return Error{fmt::format("{}: weight type {} is not supported by the CPU kernels",
                                 weights.path(), kernels::tensor_type_name(tensor->type))};
      }
    }
    LayerState layer;
    layer.attn_norm = to_f32(source.attn_norm);
    layer.ffn_norm = to_f32(source.ffn_norm);
    if (source.bq) layer.bq = to_f32(*source.bq);
    if (source.bk) layer.bk = to_f32(*source.bk);
    if (source.bv) layer.bv = to_f32(*source.bv);
    if (source.q_norm) layer.q_norm = to_f32(*source.q_norm);
    if (source.k_norm) layer.k_norm = to_f32(*source.k_norm);
    layer.wq = matrix_of(source.wq);
    layer.wk = matrix_of(source.wk);
    layer.wv = matrix_of(source.wv);
    layer.wo = matrix_of(source.wo);
    layer.w_gate = matrix_of(source.w_gate);
    layer.w_up = matrix_of(source.w_up);
    layer.w_down = matrix_of(source.w_down);
    state->layers.push_back(std::move(layer));
  }
  state->output_norm = to_f32(weights.output_norm());
  state->output = matrix_of(weights.output());
  state->repack_for_kernels();

  state->inverse_frequencies =
      kernels::rope_inverse_frequencies(config.head_dim, config.rope_theta, config.rope_scaling);
  // Llama 3.1 GGUF files carry their RoPE scaling as per-frequency divisors.
  if (const WeightTensor* factors = weights.rope_freq_factors()) {
    const std::vector<float> divisors = to_f32(*factors);
    if (divisors.size() != state->inverse_frequencies.size()) {
      return Error{fmt::format("{}: rope_freqs.weight has {} values, expected {}", weights.path(),
                               divisors.size(), state->inverse_frequencies.size())};
    }
    for (std::size_t i = 0; i < divisors.size(); ++i) state->inverse_frequencies[i] /= divisors[i];
  }
  state->rope_layout = config.rope_layout;

  const auto tokens = static_cast<std::size_t>(options.max_batch_tokens);
  const auto hidden = static_cast<std::size_t>(config.hidden_size);
  const auto ffn = static_cast<std::size_t>(config.ffn_hidden_size);
  state->x.resize(tokens * hidden);
  state->normed.resize(tokens * hidden);
  state->projected.resize(tokens * hidden);
  state->q.resize(tokens * static_cast<std::size_t>(state->q_width()));
  state->attention.resize(tokens * static_cast<std::size_t>(state->q_width()));
  state->k.resize(tokens * static_cast<std::size_t>(state->kv_width()));
  state->v.resize(tokens * static_cast<std::size_t>(state->kv_width()));
  state->gate.resize(tokens * ffn);
  state->up.resize(tokens * ffn);
  state->last_rows.resize(static_cast<std::size_t>(options.max_sequences) * hidden);
  const int context = options.max_context > 0 ? options.max_context : config.context_length;
  state->options.max_context = context;
  for (int thread = 0; thread < pool.size(); ++thread) {
    state->attention_scratch.emplace_back(context, config.head_dim);
  }
  return std::unique_ptr<CpuBackend>(new CpuBackend(std::move(state)));
}

std::int32_t CpuBackend::vocab_size() const {
  return state_->config.vocab_size;
}
std::int32_t CpuBackend::max_batch_tokens() const {
  return state_->options.max_batch_tokens;
}

std::uint64_t CpuBackend::kv_block_bytes(KvCacheType type, std::int32_t block_size) const {
  const kernels::KvCacheLayout layout{type, block_size, state_->config.n_kv_heads,
                                      state_->config.head_dim};
  return 2ull * kernels::kv_block_bytes(layout) * state_->layers.size();
}

Status CpuBackend::allocate_kv_cache(const KvCacheSpec& spec) {
  if (spec.num_blocks <= 0 || spec.block_size <= 0) {
    return Error{"cpu backend: the KV cache needs at least one block of at least one token"};
  }
  State& s = *state_;
  s.kv_layout =
      kernels::KvCacheLayout{spec.type, spec.block_size, s.config.n_kv_heads, s.config.head_dim};
  const std::size_t pool_bytes =
      kernels::kv_block_bytes(s.kv_layout) * static_cast<std::size_t>(spec.num_blocks);
  for (LayerState& layer : s.layers) {
    layer.k_pool = allocate_aligned(pool_bytes);
    layer.v_pool = allocate_aligned(pool_bytes);
    if (!layer.k_pool || !layer.v_pool) {
      s.kv_blocks = 0;
      return Error{fmt::format("cpu backend: cannot allocate {} bytes of KV cache",
                               2 * pool_bytes * s.layers.size())};
    }
  }
  s.kv_blocks = spec.num_blocks;
  return Status::success();
}

Status CpuBackend::copy_kv_blocks(std::span<const BlockCopy> copies) {
  State& s = *state_;
  const std::size_t block_bytes = kernels::kv_block_bytes(s.kv_layout);
  for (const BlockCopy& copy : copies) {
    if (copy.src < 0 || copy.src >= s.kv_blocks || copy.dst < 0 || copy.dst >= s.kv_blocks) {
      return Error{fmt::format("cpu backend: KV block copy {} -> {} outside the pool of {}",
                               copy.src, copy.dst, s.kv_blocks)};
    }
  }
  for (LayerState& layer : s.layers) {
    for (const BlockCopy& copy : copies) {
      const auto src = static_cast<std::size_t>(copy.src) * block_bytes;
      const auto dst = static_cast<std::size_t>(copy.dst) * block_bytes;
      std::memcpy(layer.k_pool.get() + dst, layer.k_pool.get() + src, block_bytes);
      std::memcpy(layer.v_pool.get() + dst, layer.v_pool.get() + src, block_bytes);
    }
  }
  return Status::success();
}

Status CpuBackend::State::validate(const BatchPlan& plan, std::span<float> logits) const {
  if (kv_blocks == 0) return Error{"cpu backend: forward() before allocate_kv_cache()"};
  const std::int32_t tokens = plan.num_tokens();
  if (tokens <= 0 || tokens > options.max_batch_tokens) {
    return Error{fmt::format("cpu backend: batch of {} tokens (limit {})", tokens,
                             options.max_batch_tokens)};
  }
  if (plan.positions.size() != plan.token_ids.size()) {
    return Error{"cpu backend: positions and token ids differ in length"};
  }
  if (plan.num_logit_rows() > options.max_sequences ||
      static_cast<std::int64_t>(plan.sequences.size()) > tokens) {
    return Error{"cpu backend: too many sequences in one batch"};
  }
  if (logits.size() < static_cast<std::size_t>(plan.num_logit_rows()) *
                          static_cast<std::size_t>(config.vocab_size)) {
    return Error{"cpu backend: logits buffer too small"};
  }
  for (const std::int32_t id : plan.token_ids) {
    if (id < 0 || id >= config.vocab_size) {
      return Error{fmt::format("cpu backend: token id {} outside the vocabulary", id)};
    }
  }
  std::int32_t expected_begin = 0;
  for (const SequenceChunk& chunk : plan.sequences) {
    if (chunk.token_begin != expected_begin || chunk.token_count <= 0 ||
        chunk.token_begin + chunk.token_count > tokens) {
      return Error{"cpu backend: sequence chunks must tile the token list in order"};
    }
    expected_begin += chunk.token_count;
    const std::int64_t end_position = std::int64_t{chunk.first_position} + chunk.token_count;
    if (chunk.first_position < 0 || end_position > options.max_context) {
      return Error{fmt::format("cpu backend: positions up to {} exceed the context of {}",
                               end_position, options.max_context)};
    }
    if (chunk.block_table_begin < 0 || chunk.block_count < 0 ||
        static_cast<std::size_t>(chunk.block_table_begin) + chunk.block_count >
            plan.block_tables.size() ||
        std::int64_t{chunk.block_count} * kv_layout.block_size < end_position) {
      return Error{"cpu backend: a sequence's block table does not cover its positions"};
    }
    for (std::int32_t i = 0; i < chunk.block_count; ++i) {
      const std::int32_t block = plan.block_tables[chunk.block_table_begin + i];
      if (block < 0 || block >= kv_blocks) {
        return Error{
            fmt::format("cpu backend: KV block {} outside the pool of {}", block, kv_blocks)};
      }
    }
    for (std::int32_t i = 0; i < chunk.token_count; ++i) {
      if (plan.positions[chunk.token_begin + i] != chunk.first_position + i) {
        return Error{"cpu backend: positions within a chunk must be consecutive"};
      }
    }
  }
  if (expected_begin != tokens) return Error{"cpu backend: tokens outside every sequence"};
  return Status::success();
}

void CpuBackend::State::embed(const BatchPlan& plan) {
  const WeightTensor& table = weights.token_embedding();
  const std::int64_t hidden = config.hidden_size;
  pool.parallel_for(plan.num_tokens(), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const auto id = static_cast<std::size_t>(plan.token_ids[static_cast<std::size_t>(t)]);
      kernels::dequantize_row(table.type, table.data + id * table.row_bytes, &x[t * hidden],
                              hidden);
    }
  });
}

void CpuBackend::State::norm_rows(const float* in, const float* weight, float* out,
                                  std::int64_t rows, std::int64_t cols) {
  const float eps = config.rms_norm_eps;
  pool.parallel_for(rows, [&](std::int64_t begin, std::int64_t end) {
    kernels::rms_norm(in + begin * cols, weight, out + begin * cols, end - begin, cols, eps);
  });
}

void CpuBackend::State::add_bias(float* rows, std::int64_t count, std::int64_t width,
                                 const std::vector<float>& bias) {
  if (bias.empty()) return;
  for (std::int64_t t = 0; t < count; ++t) {
    float* row = rows + t * width;
    for (std::int64_t i = 0; i < width; ++i) row[i] += bias[static_cast<std::size_t>(i)];
  }
}

void CpuBackend::State::attend(const BatchPlan& plan, LayerState& layer) {
  const std::int64_t q_stride = q_width();
  const int kv_heads = config.n_kv_heads;
  const auto items = static_cast<std::int64_t>(plan.sequences.size()) * kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(config.head_dim));
  pool.run([&](int thread_index, int thread_count) {
    kernels::AttentionScratch& scratch = attention_scratch[static_cast<std::size_t>(thread_index)];
    for (std::int64_t item = thread_index; item < items; item += thread_count) {
      const SequenceChunk& chunk = plan.sequences[static_cast<std::size_t>(item / kv_heads)];
      const int kv_head = static_cast<int>(item % kv_heads);
      kernels::paged_attention(
          &q[chunk.token_begin * q_stride], q_stride, chunk.token_count, chunk.first_position,
          config.n_heads, kv_head,
          &plan.block_tables[static_cast<std::size_t>(chunk.block_table_begin)], kv_layout,
          layer.k_pool.get(), layer.v_pool.get(), scale, &attention[chunk.token_begin * q_stride],
          q_stride, scratch);
    }
  });
}

void CpuBackend::State::run_layer(const BatchPlan& plan, LayerState& layer) {
  const std::int64_t tokens = plan.num_tokens();
  const std::int64_t hidden = config.hidden_size;
  const std::int64_t ffn = config.ffn_hidden_size;
  const std::int64_t qw = q_width();
  const std::int64_t kvw = kv_width();

  norm_rows(x.data(), layer.attn_norm.data(), normed.data(), tokens, hidden);
  const kernels::MatmulTarget qkv[] = {
      {&layer.wq, q.data(), qw}, {&layer.wk, k.data(), kvw}, {&layer.wv, v.data(), kvw}};
  kernels::matmul_same_input(qkv, normed.data(), tokens, hidden, workspace, pool);
  add_bias(q.data(), tokens, qw, layer.bq);
  add_bias(k.data(), tokens, kvw, layer.bk);
  add_bias(v.data(), tokens, kvw, layer.bv);
  if (!layer.q_norm.empty()) {
    norm_rows(q.data(), layer.q_norm.data(), q.data(), tokens * config.n_heads, config.head_dim);
    norm_rows(k.data(), layer.k_norm.data(), k.data(), tokens * config.n_kv_heads, config.head_dim);
  }
  kernels::apply_rope(q.data(), tokens, qw, config.n_heads, config.head_dim, plan.positions.data(),
                      inverse_frequencies, rope_layout);
  kernels::apply_rope(k.data(), tokens, kvw, config.n_kv_heads, config.head_dim,
                      plan.positions.data(), inverse_frequencies, rope_layout);
  for (const SequenceChunk& chunk : plan.sequences) {
    kernels::store_kv(&k[chunk.token_begin * kvw], kvw, &v[chunk.token_begin * kvw], kvw,
                      chunk.token_count,
                      &plan.positions[static_cast<std::size_t>(chunk.token_begin)],
                      &plan.block_tables[static_cast<std::size_t>(chunk.block_table_begin)],
                      kv_layout, layer.k_pool.get(), layer.v_pool.get());
  }
  attend(plan, layer);
  kernels::matmul(layer.wo, attention.data(), tokens, qw, projected.data(), hidden, workspace,
                  pool);
  for (std::int64_t i = 0; i < tokens * hidden; ++i) x[i] += projected[i];

  norm_rows(x.data(), layer.ffn_norm.data(), normed.data(), tokens, hidden);
  const kernels::MatmulTarget gate_up[] = {{&layer.w_gate, gate.data(), ffn},
                                           {&layer.w_up, up.data(), ffn}};
  kernels::matmul_same_input(gate_up, normed.data(), tokens, hidden, workspace, pool);
  pool.parallel_for(tokens, [&](std::int64_t begin, std::int64_t end) {
    kernels::silu_mul(&gate[begin * ffn], &up[begin * ffn], &gate[begin * ffn],
                      (end - begin) * ffn);
  });
  kernels::matmul(layer.w_down, gate.data(), tokens, ffn, projected.data(), hidden, workspace,
                  pool);
  for (std::int64_t i = 0; i < tokens * hidden; ++i) x[i] += projected[i];
}

Status CpuBackend::forward(const BatchPlan& plan, std::span<float> logits) {
  State& s = *state_;
  if (Status valid = s.validate(plan, logits); !valid.ok()) return valid;
  s.embed(plan);
  for (LayerState& layer : s.layers) s.run_layer(plan, layer);

  const std::int64_t hidden = s.config.hidden_size;
  std::int64_t rows = 0;
  for (const SequenceChunk& chunk : plan.sequences) {
    if (!chunk.wants_logits) continue;
    const std::int64_t last = chunk.token_begin + chunk.token_count - 1;
    std::memcpy(&s.last_rows[rows * hidden], &s.x[last * hidden], sizeof(float) * hidden);
    ++rows;
  }
  if (rows == 0) return Status::success();
  s.norm_rows(s.last_rows.data(), s.output_norm.data(), s.last_rows.data(), rows, hidden);
  kernels::matmul(s.output, s.last_rows.data(), rows, hidden, logits.data(), s.config.vocab_size,
                  s.workspace, s.pool);
  return Status::success();
}

}  // namespace tern::engine
