#pragma once

#include <vector>

#include "engine/expected.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/rope.h"

namespace tern::engine {

// The small per-model tables every backend needs as f32, whatever the file stored: norm weights,
// biases and the RoPE frequency table. Built once from the weights; a CPU backend reads them in
// place, a GPU backend uploads them.
struct ModelTables {
  struct Layer {
    std::vector<float> attn_norm, ffn_norm;
    std::vector<float> bq, bk, bv;           // empty without QKV bias
    std::vector<float> q_norm, k_norm;       // empty without per-head Q/K norms
    std::vector<float> q_a_norm, kv_a_norm;  // latent attention; q_a_norm only with q_lora_rank
    std::vector<float> selection_bias;       // DeepSeek-V3's router bias; empty without
  };
  std::vector<Layer> layers;
  std::vector<float> output_norm;
  // [rotary_dim / 2], scaling applied; the rotary dims are head_dim, or latent attention's
  // rope_head_dim.
  std::vector<float> rope_inverse_frequencies;
  kernels::RopeLayout rope_layout = kernels::RopeLayout::neox;
  // YaRN's factors (1 otherwise): on RoPE's cos and sin, and on the softmax scale (DeepSeek).
  float rope_magnitude = 1.0f;
  float softmax_scale_multiplier = 1.0f;

  // Errors name the file and the tensor (e.g. a rope_freqs.weight of the wrong length).
  static Expected<ModelTables> build(const ModelWeights& weights);
};

}  // namespace tern::engine
