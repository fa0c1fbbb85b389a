#include "engine/model/model_config.h"

#include <fmt/format.h>

#include <cmath>

namespace tern::engine {
namespace {

Status validate_moe(const MoeConfig& moe, const std::string& source) {
  if (!moe.enabled()) return {};
  const auto fail = [&](std::string_view what) {
    return Error{fmt::format("{}: mixture of experts: {}", source, what)};
  };
  if (moe.experts_per_token <= 0 || moe.experts_per_token > moe.n_experts) {
    return fail(fmt::format("experts per token (num_experts_per_tok) {} must be in 1..{}",
                            moe.experts_per_token, moe.n_experts));
  }
  if (moe.expert_ffn <= 0) {
    return fail(fmt::format("expert FFN length (moe_intermediate_size) {} must be positive",
                            moe.expert_ffn));
  }
  if (moe.n_groups < 1 || moe.n_experts % moe.n_groups != 0) {
    return fail(fmt::format("expert group count (n_group) {} must divide the {} experts",
                            moe.n_groups, moe.n_experts));
  }
  if (moe.groups_per_token < 1 || moe.groups_per_token > moe.n_groups ||
      moe.groups_per_token * (moe.n_experts / moe.n_groups) < moe.experts_per_token) {
    return fail(fmt::format(
        "groups per token (topk_group) {} must be in 1..{} and hold the {} experts per token",
        moe.groups_per_token, moe.n_groups, moe.experts_per_token));
  }
  if (moe.sparse_step < 1) {
    return fail(fmt::format("decoder_sparse_step {} must be positive", moe.sparse_step));
  }
  if (!(std::isfinite(moe.weight_scale) && moe.weight_scale > 0)) {
    return fail(fmt::format("routed_scaling_factor {} must be positive", moe.weight_scale));
  }
  if (moe.shared_expert_ffn < 0) return fail("shared expert FFN length is negative");
  return {};
}

Status validate_latent(const ModelConfig& config, const std::string& source) {
  const LatentAttentionConfig& latent = config.latent;
  if (!latent.enabled()) return {};
  // Real models use ranks in the hundreds or thousands; the bound keeps every sum of them in int.
  constexpr int kLargest = 1 << 20;
  for (const auto& [value, name] : {std::pair{latent.q_lora_rank, "q_lora_rank"},
                                    std::pair{latent.kv_lora_rank, "kv_lora_rank"},
                                    std::pair{latent.nope_head_dim, "qk_nope_head_dim"},
                                    std::pair{latent.rope_head_dim, "qk_rope_head_dim"},
                                    std::pair{latent.value_head_dim, "v_head_dim"}}) {
    if (value > kLargest) {
      return Error{fmt::format("{}: latent attention {} {} is larger than {}", source, name, value,
                               kLargest)};
    }
  }
  if (latent.q_lora_rank < 0 || latent.nope_head_dim <= 0 || latent.rope_head_dim <= 0 ||
      latent.rope_head_dim % 2 != 0 || latent.value_head_dim <= 0) {
    return Error{
        fmt::format("{}: latent attention needs q_lora_rank >= 0, qk_nope_head_dim > 0, an even "
                    "qk_rope_head_dim > 0 and v_head_dim > 0 (got {}, {}, {}, {})",
                    source, latent.q_lora_rank, latent.nope_head_dim, latent.rope_head_dim,
                    latent.value_head_dim)};
  }
  if (config.head_dim != latent.nope_head_dim + latent.rope_head_dim) {
    return Error{fmt::format("{}: latent attention key length {} is not {} + {}", source,
                             config.head_dim, latent.nope_head_dim, latent.rope_head_dim)};
  }
  return {};
}

}  // namespace

bool MoeConfig::is_moe_layer(int layer) const {
  if (!enabled() || layer < first_dense_layers) return false;
  if (sparse_step > 1 && (layer + 1) % sparse_step != 0) return false;
  for (int dense : dense_layers) {
    if (dense == layer) return false;
  }
  return true;
}

Status validate_config(const ModelConfig& config, const std::string& source) {
  const auto positive = [&](int value, std::string_view name) -> Status {
    if (value > 0) return {};
    return Error{fmt::format("{}: {} must be positive, got {}", source, name, value)};
  };
  for (const auto& [value, name] :
       {std::pair{config.n_layers, "block count (num_hidden_layers)"},
        std::pair{config.hidden_size, "embedding length (hidden_size)"},
        std::pair{config.n_heads, "head count (num_attention_heads)"},
        std::pair{config.n_kv_heads, "KV head count (num_key_value_heads)"},
        std::pair{config.head_dim, "head dimension (head_dim)"},
        std::pair{config.ffn_hidden_size, "feed-forward length (intermediate_size)"},
        std::pair{config.vocab_size, "vocabulary size"},
        std::pair{config.context_length, "context length (max_position_embeddings)"}}) {
    if (Status status = positive(value, name); !status) return status;
  }
  if (config.n_heads % config.n_kv_heads != 0) {
    return Error{fmt::format("{}: head count {} is not a multiple of the KV head count {}", source,
                             config.n_heads, config.n_kv_heads)};
  }
  if (config.head_dim % 2 != 0) {
    return Error{
        fmt::format("{}: head dimension {} is odd; RoPE needs pairs", source, config.head_dim)};
  }
  if (!(std::isfinite(config.rms_norm_eps) && config.rms_norm_eps > 0)) {
    return Error{
        fmt::format("{}: RMSNorm epsilon {} must be positive", source, config.rms_norm_eps)};
  }
  if (!(std::isfinite(config.rope_theta) && config.rope_theta > 0)) {
    return Error{fmt::format("{}: RoPE base {} must be positive", source, config.rope_theta)};
  }
  const RopeScalingConfig& scaling = config.rope_scaling;
  if (scaling.type != RopeScalingConfig::Type::none &&
      !(std::isfinite(scaling.factor) && scaling.factor > 0)) {
    return Error{
        fmt::format("{}: RoPE scaling factor {} must be positive", source, scaling.factor)};
  }
  if (scaling.type == RopeScalingConfig::Type::llama3 &&
      !(scaling.original_max_position > 0 && scaling.low_freq_factor > 0 &&
        scaling.high_freq_factor > scaling.low_freq_factor)) {
    return Error{
        fmt::format("{}: llama3 RoPE scaling needs original_max_position_embeddings > 0 "
                    "and high_freq_factor > low_freq_factor > 0",
                    source)};
  }
  if (Status status = validate_moe(config.moe, source); !status) return status;
  if (Status status = validate_latent(config, source); !status) return status;
  for (int id : config.eos_token_ids) {
    if (id < 0 || id >= config.vocab_size) {
      return Error{fmt::format("{}: EOS token id {} is outside the vocabulary of {}", source, id,
                               config.vocab_size)};
    }
  }
  if (config.bos_token_id >= config.vocab_size) {
    return Error{fmt::format("{}: BOS token id {} is outside the vocabulary of {}", source,
                             config.bos_token_id, config.vocab_size)};
  }
  return {};
}

}  // namespace tern::engine
