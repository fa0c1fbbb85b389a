#include "engine/backend/cpu/cpu_batch_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::engine {
namespace {

kernels::WeightMatrix matrix_of(const std::optional<WeightTensor>& tensor) {
  return tensor ? weight_matrix_of(*tensor) : kernels::WeightMatrix{};
}

// The widest input any matmul of the model reads.
std::int64_t widest_matmul_input(const RankShape& shape) {
  return std::max<std::int64_t>({shape.hidden, shape.ffn, shape.q_width(), shape.attention_width(),
                                 shape.expert_ffn, shape.shared_expert_ffn, shape.q_lora_rank,
                                 shape.kv_lora_rank, shape.head_dim});
}

}  // namespace

std::vector<kernels::WeightMatrix> weight_matrices_of(std::span<const WeightTensor> tensors) {
  std::vector<kernels::WeightMatrix> out;
  out.reserve(tensors.size());
  for (const WeightTensor& tensor : tensors) out.push_back(weight_matrix_of(tensor));
  return out;
}

CpuBatchOps::CpuBatchOps(const ModelWeights& weights, const ModelTables& tables,
                         const RankShape& shape, kernels::ThreadPool& pool,
                         const CpuBuffers& buffers)
    : weights_(weights),
      tables_(tables),
      shape_(shape),
      pool_(pool),
      buffers_(buffers),
      workspace_(buffers.max_tokens, widest_matmul_input(shape)) {
  for (const LayerWeights& source : weights.layers()) {
    LayerMatrices layer{weight_matrix_of(source.wq),
                        weight_matrix_of(source.wk),
                        weight_matrix_of(source.wv),
                        weight_matrix_of(source.wo),
                        weight_matrix_of(source.w_gate),
                        weight_matrix_of(source.w_up),
                        weight_matrix_of(source.w_down),
                        {},
                        {},
                        {},
                        {},
                        {},
                        {},
                        {}};
    ExpertMatrices experts;
    if (const std::optional<ExpertWeights>& moe = source.experts) {
      layer.router = weight_matrix_of(moe->router);
      layer.shared_gate = matrix_of(moe->shared_gate);
      layer.shared_up = matrix_of(moe->shared_up);
      layer.shared_down = matrix_of(moe->shared_down);
      experts = {weight_matrices_of(moe->gate), weight_matrices_of(moe->up),
                 weight_matrices_of(moe->down)};
    }
    if (const std::optional<LatentAttentionWeights>& latent = source.latent) {
      layer.q_a = matrix_of(latent->q_a);
      layer.q_b = matrix_of(latent->q_b);
      layer.kv_a = weight_matrix_of(latent->kv_a);
    }
    layers_.push_back(layer);
    experts_.push_back(std::move(experts));
  }
  output_ = weight_matrix_of(weights.output());
  kv_pools_.resize(layers_.size());

  const auto tokens = static_cast<std::size_t>(buffers.max_tokens);
  const auto hidden = static_cast<std::size_t>(shape.hidden);
  const auto ffn = static_cast<std::size_t>(shape.ffn);
  const auto q_width = static_cast<std::size_t>(shape.q_width());
  const auto kv_width = static_cast<std::size_t>(shape.kv_width());
  x_.resize(tokens * hidden);
  normed_.resize(tokens * hidden);
  projected_.resize(tokens * hidden);
  q_.resize(tokens * q_width);
  attention_.resize(tokens * static_cast<std::size_t>(shape.attention_width()));
  k_.resize(tokens * kv_width);
  v_.resize(tokens * kv_width);
  gate_.resize(tokens * ffn);
  up_.resize(tokens * ffn);
  logit_rows_.resize(static_cast<std::size_t>(buffers.max_logit_rows) * hidden);
  rope_cosines_.resize(tokens * tables.rope_inverse_frequencies.size());
  rope_sines_.resize(rope_cosines_.size());
  const bool latent = shape.kv_lora_rank > 0;
  const int attention_head_dim = latent ? static_cast<int>(shape.latent_width()) : shape.head_dim;
  for (int thread = 0; thread < pool.size(); ++thread) {
    attention_scratch_.emplace_back(buffers.max_context, attention_head_dim);
  }
  if (shape.n_experts > 0) allocate_expert_buffers();
  if (latent) {
    allocate_latent_buffers();
    prepare_latent_matrices();
  }
}

kernels::KvCacheLayout CpuBatchOps::kv_layout(const RankShape& shape, kernels::KvType type,
                                              std::int32_t block_size) {
  if (shape.kv_lora_rank > 0) {
    return {type, block_size, 1, static_cast<int>(shape.latent_width())};
  }
  return {type, block_size, shape.n_kv_heads, shape.head_dim};
}

Status CpuBatchOps::allocate_kv_cache(const kernels::KvCacheLayout& layout,
                                      std::int32_t num_blocks) {
  constexpr std::size_t kAlignment = 64;
  kv_layout_ = layout;
  const std::size_t bytes = kernels::kv_block_bytes(layout) * static_cast<std::size_t>(num_blocks);
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  const bool separate_values = shape_.kv_lora_rank == 0;
  for (KvPools& pools : kv_pools_) {
    pools.k = AlignedBytes(static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded)));
    if (separate_values) {
      pools.v = AlignedBytes(static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded)));
    }
    if (!pools.k || (separate_values && !pools.v)) {
      kv_blocks_ = 0;
      return Error{fmt::format("cpu backend: cannot allocate {} bytes of KV cache",
                               (separate_values ? 2 : 1) * bytes * kv_pools_.size())};
    }
  }
  kv_blocks_ = num_blocks;
  return Status::success();
}

Status CpuBatchOps::copy_kv_blocks(std::span<const BlockCopy> copies) {
  const std::size_t block_bytes = kernels::kv_block_bytes(kv_layout_);
  for (const BlockCopy& copy : copies) {
    if (copy.src < 0 || copy.src >= kv_blocks_ || copy.dst < 0 || copy.dst >= kv_blocks_) {
      return Error{fmt::format("cpu backend: KV block copy {} -> {} outside the pool of {}",
                               copy.src, copy.dst, kv_blocks_)};
    }
  }
  for (KvPools& pools : kv_pools_) {
    for (const BlockCopy& copy : copies) {
      const auto src = static_cast<std::size_t>(copy.src) * block_bytes;
      const auto dst = static_cast<std::size_t>(copy.dst) * block_bytes;
      std::memcpy(pools.k.get() + dst, pools.k.get() + src, block_bytes);
      if (pools.v) std::memcpy(pools.v.get() + dst, pools.v.get() + src, block_bytes);
    }
  }
  return Status::success();
}

void CpuBatchOps::begin(const BatchPlan& plan, std::span<float> logits) {
  plan_ = &plan;
  logits_ = logits.data();
  expert_bytes_read_ = 0;
  logit_rows_count_ = plan.num_logit_rows();
  rope_angles_ready_ = false;
}

float* CpuBatchOps::data(Activation activation) {
  switch (activation) {
    case Activation::x:
      return x_.data();
    case Activation::normed:
      return normed_.data();
    case Activation::q:
      return q_.data();
    case Activation::k:
      return k_.data();
    case Activation::v:
      return v_.data();
    case Activation::attention:
      return attention_.data();
    case Activation::projected:
      return projected_.data();
    case Activation::gate:
      return gate_.data();
    case Activation::up:
      return up_.data();
    case Activation::logit_rows:
      return logit_rows_.data();
    case Activation::router_logits:
      return router_logits_.data();
    case Activation::shared_gate:
      return shared_gate_.data();
    case Activation::shared_up:
      return shared_up_.data();
    case Activation::shared_out:
      return shared_out_.data();
    case Activation::q_lora:
      return q_lora_.data();
    case Activation::latent:
      return latent_.data();
    case Activation::logits:
      break;
  }
  return logits_;
}

std::int64_t CpuBatchOps::width(Activation activation) const {
  return activation_width(shape_, activation);
}

std::int64_t CpuBatchOps::rows(Activation activation) const {
  return activation == Activation::logit_rows || activation == Activation::logits
             ? logit_rows_count_
             : plan_->num_tokens();
}

Status CpuBatchOps::read_activation(Activation activation, HostActivation& out) {
  out.rows = rows(activation);
  out.width = width(activation);
  const float* values = data(activation);
  out.values.assign(values, values + out.rows * out.width);
  return Status::success();
}

const std::vector<float>& CpuBatchOps::vector(VectorRef ref) const {
  if (ref.name == Vector::output_norm) return tables_.output_norm;
  return layer_vector(tables_.layers[static_cast<std::size_t>(ref.layer)], ref.name);
}

const kernels::WeightMatrix& CpuBatchOps::matrix(std::int32_t layer, Matrix name) const {
  if (name == Matrix::output) return output_;
  return layers_[static_cast<std::size_t>(layer)][name];
}

void CpuBatchOps::embed(Activation out) {
  const WeightTensor& table = weights_.token_embedding();
  const std::int64_t hidden = shape_.hidden;
  float* rows_out = data(out);
  pool_.parallel_for(plan_->num_tokens(), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const auto id = static_cast<std::size_t>(plan_->token_ids[static_cast<std::size_t>(t)]);
      kernels::dequantize_row(table.type, table.data + id * table.row_bytes, rows_out + t * hidden,
                              hidden);
    }
  });
}

void CpuBatchOps::rms_norm(Activation in, std::optional<Activation> residual, VectorRef weight,
                           std::int32_t rows_per_token, std::int32_t width, Activation out) {
  const std::int64_t count = rows(in);
  if (count == 0) return;
  float* input = data(in);
  if (residual) add(in, *residual);
  const float* scale = vector(weight).data();
  float* output = data(out);
  const std::int64_t total_rows = count * rows_per_token;
  const float eps = shape_.rms_norm_eps;
  pool_.parallel_for(total_rows, [&](std::int64_t begin, std::int64_t end) {
    kernels::rms_norm(input + begin * width, scale, output + begin * width, end - begin, width,
                      eps);
  });
}

void CpuBatchOps::matmul(std::int32_t layer, std::span<const MatmulOutput> group, Activation in) {
  const std::int64_t count = rows(in);
  if (count == 0 || group.empty()) return;
  if (group.size() == 1) {
    const MatmulOutput& only = group.front();
    kernels::matmul(matrix(layer, only.weight), data(in), count, width(in), data(only.out),
                    width(only.out), workspace_, pool_);
    return;
  }
  std::array<kernels::MatmulTarget, 4> targets{};
  const std::size_t members = std::min(group.size(), targets.size());
  for (std::size_t i = 0; i < members; ++i) {
    targets[i] = {&matrix(layer, group[i].weight), data(group[i].out), width(group[i].out)};
  }
  kernels::matmul_same_input(std::span(targets.data(), members), data(in), count, width(in),
                             workspace_, pool_);
}

void CpuBatchOps::add_bias(VectorRef bias, Activation rows_of) {
  const std::vector<float>& values = vector(bias);
  if (values.empty()) return;
  const std::int64_t count = rows(rows_of);
  const std::int64_t row_width = width(rows_of);
  float* out = data(rows_of);
  for (std::int64_t t = 0; t < count; ++t) {
    float* row = out + t * row_width;
    for (std::int64_t i = 0; i < row_width; ++i) row[i] += values[static_cast<std::size_t>(i)];
  }
}

void CpuBatchOps::rope(Activation rows_of, std::int32_t heads) {
  rotate(data(rows_of), rows(rows_of), width(rows_of), heads, shape_.head_dim);
}

void CpuBatchOps::rotate(float* rows_of, std::int64_t tokens, std::int64_t row_stride, int heads,
                         int head_dim) {
  const std::span<const float> frequencies = tables_.rope_inverse_frequencies;
  if (!rope_angles_ready_) {
    const auto step_tokens = static_cast<std::int64_t>(plan_->positions.size());
    assert(step_tokens * static_cast<std::int64_t>(frequencies.size()) <=
           static_cast<std::int64_t>(rope_cosines_.size()));
    kernels::rope_angles(plan_->positions.data(), step_tokens, frequencies, tables_.rope_magnitude,
                         rope_cosines_.data(), rope_sines_.data());
    rope_angles_ready_ = true;
  }
  kernels::rotate_pairs(rows_of, tokens, row_stride, heads, head_dim, rope_cosines_.data(),
                        rope_sines_.data(), frequencies.size(), tables_.rope_layout);
}

void CpuBatchOps::store_kv(std::int32_t layer, Activation k, Activation v) {
  KvPools& pools = kv_pools_[static_cast<std::size_t>(layer)];
  const std::int64_t k_width = width(k);
  const std::int64_t v_width = width(v);
  const float* keys = data(k);
  const float* values = data(v);
  for (const SequenceChunk& chunk : plan_->sequences) {
    kernels::store_kv(keys + chunk.token_begin * k_width, k_width,
                      values + chunk.token_begin * v_width, v_width, chunk.token_count,
                      &plan_->positions[static_cast<std::size_t>(chunk.token_begin)],
                      &plan_->block_tables[static_cast<std::size_t>(chunk.block_table_begin)],
                      kv_layout_, pools.k.get(), pools.v.get());
  }
}

void CpuBatchOps::paged_attention(std::int32_t layer, Activation q, Activation out) {
  const KvPools& pools = kv_pools_[static_cast<std::size_t>(layer)];
  const std::int64_t q_stride = width(q);
  const std::int64_t out_stride = width(out);
  const float* queries = data(q);
  float* output = data(out);
  const int kv_heads = shape_.n_kv_heads;
  const auto items = static_cast<std::int64_t>(plan_->sequences.size()) * kv_heads;
  const float scale =
      tables_.softmax_scale_multiplier / std::sqrt(static_cast<float>(shape_.head_dim));
  run_attention_items(shape_.n_heads, shape_.head_dim, [&](int thread_index, int thread_count) {
    kernels::AttentionScratch& scratch = attention_scratch_[static_cast<std::size_t>(thread_index)];
    for (std::int64_t item = thread_index; item < items; item += thread_count) {
      const SequenceChunk& chunk = plan_->sequences[static_cast<std::size_t>(item / kv_heads)];
      const int kv_head = static_cast<int>(item % kv_heads);
      kernels::paged_attention(
          queries + chunk.token_begin * q_stride, q_stride, chunk.token_count, chunk.first_position,
          shape_.n_heads, kv_head,
          &plan_->block_tables[static_cast<std::size_t>(chunk.block_table_begin)], kv_layout_,
          pools.k.get(), pools.v.get(), shape_.head_dim, scale,
          output + chunk.token_begin * out_stride, out_stride, scratch);
    }
  });
}

void CpuBatchOps::run_attention_items(std::int64_t heads, std::int64_t head_dim,
                                      kernels::FunctionRef<void(int, int)> items) {
  // Query-key products of the step: at short contexts a decode step's attention is less work
  // than waking the pool. Which thread runs an item does not change its arithmetic. (The
  // workers spin between the jobs of a step, so a wake-up costs about a microsecond; a decode
  // step's attention over 16 heads of 64 passes that from a context of about 16, its keys and
  // values read from memory.)
  constexpr std::int64_t kInlineMultiplyAdds = 16 * 1024;
  std::int64_t multiply_adds = 0;
  for (const SequenceChunk& chunk : plan_->sequences) {
    multiply_adds += std::int64_t{chunk.token_count} * (chunk.first_position + chunk.token_count);
  }
  multiply_adds *= heads * head_dim;
  if (multiply_adds <= kInlineMultiplyAdds) {
    items(0, 1);
  } else {
    pool_.run(items);
  }
}

void CpuBatchOps::add(Activation into, Activation from) {
  float* target = data(into);
  const float* addend = data(from);
  const std::int64_t values = rows(into) * width(into);
  for (std::int64_t i = 0; i < values; ++i) target[i] += addend[i];
}

void CpuBatchOps::silu_mul(Activation gate, Activation up, Activation out) {
  const std::int64_t row_width = width(gate);
  const float* gates = data(gate);
  const float* ups = data(up);
  float* output = data(out);
  pool_.parallel_for(rows(gate), [&](std::int64_t begin, std::int64_t end) {
    kernels::silu_mul(gates + begin * row_width, ups + begin * row_width,
                      output + begin * row_width, (end - begin) * row_width);
  });
}

void CpuBatchOps::gather_logit_rows(Activation from, Activation to) {
  const std::int64_t row_width = width(from);
  const float* source = data(from);
  float* target = data(to);
  std::int64_t row = 0;
  for (const SequenceChunk& chunk : plan_->sequences) {
    if (!chunk.wants_logits) continue;
    const std::int64_t last = chunk.token_begin + chunk.token_count - 1;
    std::memcpy(target + row * row_width, source + last * row_width, sizeof(float) * row_width);
    ++row;
  }
}

void CpuBatchOps::all_reduce(Activation) {}

}  // namespace tern::engine
