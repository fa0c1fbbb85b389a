#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/batch_ops.h"
#include "engine/model/rank_shape.h"

namespace tern::engine {

class ModelWeights;

// What an architecture's graph needs to know of one model on one rank.
struct GraphSpec {
  std::int32_t n_layers = 0;
  RankShape shape;
  bool qkv_bias = false;          // Q/K/V projections carry a bias
  bool qk_norm = false;           // per-head RMSNorm of Q and K before RoPE
  bool latent_attention = false;  // DeepSeek's multi-head latent attention
  bool q_lora = false;            // its query through q_a / q_a_norm / q_b, not wq
  bool shared_experts = false;    // mixture-of-experts layers also run shared experts
  std::vector<bool> moe_layers;   // per layer: a routed FFN (else dense)

  bool is_moe_layer(std::int32_t layer) const {
    return static_cast<std::size_t>(layer) < moe_layers.size() &&
           moe_layers[static_cast<std::size_t>(layer)];
  }

  // The whole model on one device, as the weights have it.
  static GraphSpec of(const ModelWeights& weights);
};

// One architecture's forward pass, written once over the op table: every backend runs it.
using ModelGraph = void (*)(const GraphSpec& spec, BatchOps& ops);

}  // namespace tern::engine
