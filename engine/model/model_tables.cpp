#include "engine/model/model_tables.h"

#include <fmt/format.h>

#include "kernels/cpu/quant.h"

namespace tern::engine {
namespace {

std::vector<float> to_f32(const WeightTensor& tensor) {
  std::vector<float> values(static_cast<std::size_t>(tensor.rows * tensor.cols));
  kernels::dequantize_row(tensor.type, tensor.data, values.data(),
                          static_cast<std::int64_t>(values.size()));
  return values;
}

std::vector<float> to_f32(const std::optional<WeightTensor>& tensor) {
  return tensor ? to_f32(*tensor) : std::vector<float>{};
}

}  // namespace

Expected<ModelTables> ModelTables::build(const ModelWeights& weights) {
  const ModelConfig& config = weights.config();
  ModelTables tables;
  tables.layers.reserve(weights.layers().size());
  for (const LayerWeights& source : weights.layers()) {
    Layer layer{to_f32(source.attn_norm),
                to_f32(source.ffn_norm),
                to_f32(source.bq),
                to_f32(source.bk),
                to_f32(source.bv),
                to_f32(source.q_norm),
                to_f32(source.k_norm),
                {},
                {},
                {}};
    if (source.latent) {
      layer.q_a_norm = to_f32(source.latent->q_a_norm);
      layer.kv_a_norm = to_f32(source.latent->kv_a_norm);
    }
    if (source.experts) layer.selection_bias = to_f32(source.experts->selection_bias);
    tables.layers.push_back(std::move(layer));
  }
  tables.output_norm = to_f32(weights.output_norm());
  const int rotary_dim = config.latent.enabled() ? config.latent.rope_head_dim : config.head_dim;
  tables.rope_inverse_frequencies =
      kernels::rope_inverse_frequencies(rotary_dim, config.rope_theta, config.rope_scaling);
  // Llama 3.1 GGUF files carry their RoPE scaling as per-frequency divisors.
  if (const WeightTensor* factors = weights.rope_freq_factors()) {
    const std::vector<float> divisors = to_f32(*factors);
    std::vector<float>& frequencies = tables.rope_inverse_frequencies;
    if (divisors.size() != frequencies.size()) {
      return Error{fmt::format("{}: rope_freqs.weight has {} values, expected {}", weights.path(),
                               divisors.size(), frequencies.size())};
    }
    for (std::size_t i = 0; i < divisors.size(); ++i) frequencies[i] /= divisors[i];
  }
  tables.rope_layout = config.rope_layout;
  tables.rope_magnitude = static_cast<float>(kernels::rope_attention_factor(config.rope_scaling));
  tables.softmax_scale_multiplier =
      static_cast<float>(kernels::rope_softmax_scale_multiplier(config.rope_scaling));
  return tables;
}

}  // namespace tern::engine
