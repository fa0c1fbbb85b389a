#pragma once

#include <cstdint>

#include "engine/model/model_config.h"

namespace tern::engine {

// The sizes one device works with. With tensor parallelism each rank holds a slice of the heads,
// the FFN width and the vocabulary; the graph reads every size from here, so splitting a model
// across devices changes only how weights are sliced and where all_reduce sums partial results.
struct RankShape {
  std::int32_t hidden = 0;      // the residual stream, whole on every rank
  std::int32_t n_heads = 0;     // query heads on this rank
  std::int32_t n_kv_heads = 0;  // KV heads on this rank
  std::int32_t head_dim = 0;
  std::int32_t ffn = 0;    // FFN width on this rank
  std::int32_t vocab = 0;  // logits columns on this rank
  float rms_norm_eps = 1e-5f;
  // Mixture of experts (0 for a dense model) and latent attention (0 without), from the config.
  std::int32_t n_experts = 0;
  std::int32_t experts_per_token = 0;
  std::int32_t expert_ffn = 0;
  std::int32_t shared_expert_ffn = 0;
  std::int32_t q_lora_rank = 0;
  std::int32_t kv_lora_rank = 0;
  std::int32_t rope_head_dim = 0;   // the rotated tail of each latent-attention query head
  std::int32_t value_head_dim = 0;  // attention output per head: head_dim, or MLA's v_head_dim

  std::int64_t q_width() const { return std::int64_t{n_heads} * head_dim; }
  std::int64_t kv_width() const { return std::int64_t{n_kv_heads} * head_dim; }
  // value_head_dim 0 (a shape built field by field) means head_dim.
  std::int64_t attention_width() const {
    return std::int64_t{n_heads} * (value_head_dim > 0 ? value_head_dim : head_dim);
  }
  std::int64_t latent_width() const { return std::int64_t{kv_lora_rank} + rope_head_dim; }

  // The whole model on one device.
  static RankShape whole(const ModelConfig& config) {
    RankShape shape{config.hidden_size,     config.n_heads,    config.n_kv_heads,  config.head_dim,
                    config.ffn_hidden_size, config.vocab_size, config.rms_norm_eps};
    shape.n_experts = config.moe.n_experts;
    shape.experts_per_token = config.moe.experts_per_token;
    shape.expert_ffn = config.moe.expert_ffn;
    shape.shared_expert_ffn = config.moe.shared_expert_ffn;
    shape.q_lora_rank = config.latent.q_lora_rank;
    shape.kv_lora_rank = config.latent.kv_lora_rank;
    shape.rope_head_dim = config.latent.rope_head_dim;
    shape.value_head_dim = config.latent.enabled() ? config.latent.value_head_dim : config.head_dim;
    return shape;
  }
};

}  // namespace tern::engine
