// The latent-attention ops of CpuBatchOps (DeepSeek's MLA), in the absorbed form: the cache holds
// one row per token, [normalised latent (kv_lora_rank), rotated rope key (rope_head_dim)], which
// every head reads as its key and, in its first kv_lora_rank values, as its value.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "engine/backend/cpu/cpu_batch_ops.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::engine {

void CpuBatchOps::allocate_latent_buffers() {
  const auto tokens = static_cast<std::size_t>(buffers_.max_tokens);
  const auto heads = static_cast<std::size_t>(shape_.n_heads);
  q_lora_.resize(tokens * static_cast<std::size_t>(shape_.q_lora_rank));
  latent_.resize(tokens * static_cast<std::size_t>(shape_.latent_width()));
  q_absorbed_.resize(tokens * heads * static_cast<std::size_t>(shape_.latent_width()));
  attended_latent_.resize(tokens * heads * static_cast<std::size_t>(shape_.kv_lora_rank));
}

// k_absorb is k_b as the file has it, or the transpose of kv_b's key rows, which only a copy can
// give: [kv_lora][nope] f32 per head, built once here.
void CpuBatchOps::prepare_latent_matrices() {
  const std::int64_t kv_lora = shape_.kv_lora_rank;
  const std::int64_t nope = shape_.head_dim - shape_.rope_head_dim;
  const std::int64_t value = shape_.value_head_dim;
  for (const LayerWeights& source : weights_.layers()) {
    LatentMatrices matrices;
    if (source.latent) {
      const LatentAttentionWeights& latent = *source.latent;
      matrices.v_up = weight_matrices_of(latent.v_b);
      matrices.k_absorb = weight_matrices_of(latent.k_b);
      if (latent.kv_b) {
        std::vector<float> key_rows(static_cast<std::size_t>(nope * kv_lora));
        for (std::int64_t head = 0; head < shape_.n_heads; ++head) {
          const std::byte* first_row =
              latent.kv_b->data +
              static_cast<std::size_t>(head * (nope + value)) * latent.kv_b->row_bytes;
          for (std::int64_t r = 0; r < nope; ++r) {
            kernels::dequantize_row(
                latent.kv_b->type, first_row + static_cast<std::size_t>(r) * latent.kv_b->row_bytes,
                &key_rows[static_cast<std::size_t>(r * kv_lora)], kv_lora);
          }
          std::vector<float>& transposed = absorb_storage_.emplace_back(key_rows.size());
          for (std::int64_t r = 0; r < nope; ++r) {
            for (std::int64_t c = 0; c < kv_lora; ++c) {
              transposed[static_cast<std::size_t>(c * nope + r)] =
                  key_rows[static_cast<std::size_t>(r * kv_lora + c)];
            }
          }
          matrices.k_absorb.push_back(
              kernels::WeightMatrix{kernels::TensorType::f32, transposed.data(), kv_lora, nope,
                                    static_cast<std::size_t>(nope) * sizeof(float)});
        }
      }
    }
    latent_matrices_.push_back(std::move(matrices));
  }
}

// Head h's matrix times its slice of every token's row, as grouped matmuls: one pool job per 64
// heads when the rows fit the workspace (decode), else one per head.
void CpuBatchOps::per_head_matmul(std::span<const kernels::WeightMatrix> matrices, HeadSlices in,
                                  HeadSlices out, std::int64_t tokens) {
  constexpr std::size_t kHeadsPerJob = 64;
  std::array<kernels::MatmulProblem, kHeadsPerJob> problems{};
  for (std::size_t first = 0; first < matrices.size(); first += kHeadsPerJob) {
    const std::size_t count = std::min(kHeadsPerJob, matrices.size() - first);
    for (std::size_t i = 0; i < count; ++i) {
      const auto head = static_cast<std::int64_t>(first + i);
      problems[i] = {&matrices[first + i], in.rows + head * in.head_width,   tokens,
                     in.row_stride,        out.rows + head * out.head_width, out.row_stride};
    }
    kernels::matmul_grouped(std::span(problems.data(), count), workspace_, pool_);
  }
}

void CpuBatchOps::store_latent_kv(std::int32_t layer, Activation latent) {
  const std::int64_t tokens = rows(latent);
  if (tokens == 0) return;
  const std::int64_t width = shape_.latent_width();
  const std::int64_t kv_lora = shape_.kv_lora_rank;
  float* rows_of = data(latent);
  const float* norm = tables_.layers[static_cast<std::size_t>(layer)].kv_a_norm.data();
  const float eps = shape_.rms_norm_eps;
  pool_.parallel_for(tokens, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      kernels::rms_norm(rows_of + t * width, norm, rows_of + t * width, 1, kv_lora, eps);
    }
  });
  rotate(rows_of + kv_lora, tokens, width, 1, static_cast<int>(width));
  KvPools& pools = kv_pools_[static_cast<std::size_t>(layer)];
  for (const SequenceChunk& chunk : plan_->sequences) {
    kernels::store_kv(rows_of + chunk.token_begin * width, width, nullptr, 0, chunk.token_count,
                      &plan_->positions[static_cast<std::size_t>(chunk.token_begin)],
                      &plan_->block_tables[static_cast<std::size_t>(chunk.block_table_begin)],
                      kv_layout_, pools.k.get(), nullptr);
  }
}

void CpuBatchOps::latent_attention(std::int32_t layer, Activation q, Activation out) {
  const std::int64_t tokens = rows(q);
  if (tokens == 0) return;
  const LatentMatrices& matrices = latent_matrices_[static_cast<std::size_t>(layer)];
  const std::int64_t heads = shape_.n_heads;
  const std::int64_t query_head = shape_.head_dim;  // nope + rope
  const std::int64_t rope = shape_.rope_head_dim;
  const std::int64_t nope = query_head - rope;
  const std::int64_t kv_lora = shape_.kv_lora_rank;
  const std::int64_t width = shape_.latent_width();
  const std::int64_t value = shape_.value_head_dim;
  float* queries = data(q);
  rotate(queries + nope, tokens, heads * query_head, static_cast<int>(heads),
         static_cast<int>(query_head));

  // Absorbed query per head: [k_absorb * q_nope (kv_lora), q_rope (rope)].
  per_head_matmul(matrices.k_absorb, {queries, query_head, heads * query_head},
                  {q_absorbed_.data(), width, heads * width}, tokens);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t head = 0; head < heads; ++head) {
      std::memcpy(&q_absorbed_[static_cast<std::size_t>((t * heads + head) * width + kv_lora)],
                  queries + t * heads * query_head + head * query_head + nope,
                  sizeof(float) * static_cast<std::size_t>(rope));
    }
  }

  // Multi-query attention over the latent rows: the kernel's heads-per-pass groups become work
  // items, so one long prefill still spreads over the pool.
  const KvPools& pools = kv_pools_[static_cast<std::size_t>(layer)];
  // The unabsorbed scale: the score is still q . k over the nope + rope dims of a query head.
  const float scale =
      tables_.softmax_scale_multiplier / std::sqrt(static_cast<float>(shape_.head_dim));
  const std::int64_t head_groups =
      (heads + kernels::kAttentionHeadsPerPass - 1) / kernels::kAttentionHeadsPerPass;
  const auto items = static_cast<std::int64_t>(plan_->sequences.size()) * head_groups;
  run_attention_items(heads, width, [&](int thread_index, int thread_count) {
    kernels::AttentionScratch& scratch = attention_scratch_[static_cast<std::size_t>(thread_index)];
    for (std::int64_t item = thread_index; item < items; item += thread_count) {
      const SequenceChunk& chunk = plan_->sequences[static_cast<std::size_t>(item / head_groups)];
      const std::int64_t first_head = (item % head_groups) * kernels::kAttentionHeadsPerPass;
      const std::int64_t group_heads =
          std::min<std::int64_t>(kernels::kAttentionHeadsPerPass, heads - first_head);
      kernels::paged_attention(
          q_absorbed_.data() + chunk.token_begin * heads * width + first_head * width,
          heads * width, chunk.token_count, chunk.first_position, static_cast<int>(group_heads), 0,
          &plan_->block_tables[static_cast<std::size_t>(chunk.block_table_begin)], kv_layout_,
          pools.k.get(), pools.k.get(), static_cast<int>(kv_lora), scale,
          attended_latent_.data() + chunk.token_begin * heads * kv_lora + first_head * kv_lora,
          heads * kv_lora, scratch);
    }
  });

  float* output = data(out);
  per_head_matmul(matrices.v_up, {attended_latent_.data(), kv_lora, heads * kv_lora},
                  {output, value, heads * value}, tokens);
}

}  // namespace tern::engine
