#include "engine/model/model_config.h"

#include <fmt/format.h>

#include <cmath>

namespace tern::engine {

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
