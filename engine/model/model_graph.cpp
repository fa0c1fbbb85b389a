#include "engine/model/model_graph.h"

#include "engine/model/model_weights.h"

namespace tern::engine {

GraphSpec GraphSpec::of(const ModelWeights& weights) {
  const ModelConfig& config = weights.config();
  GraphSpec spec;
  spec.n_layers = static_cast<std::int32_t>(weights.layers().size());
  spec.shape = RankShape::whole(config);
  // From the tensors, as the loaders found them: a Llama checkpoint may carry QKV bias too.
  spec.qkv_bias = !weights.layers().empty() && weights.layers().front().bq.has_value();
  spec.qk_norm = !weights.layers().empty() && weights.layers().front().q_norm.has_value();
  for (const LayerWeights& layer : weights.layers()) {
    spec.moe_layers.push_back(layer.experts.has_value());
    if (layer.experts && layer.experts->shared_gate) spec.shared_experts = true;
    if (layer.latent) {
      spec.latent_attention = true;
      spec.q_lora = layer.latent->q_a.has_value();
    }
  }
  return spec;
}

}  // namespace tern::engine
