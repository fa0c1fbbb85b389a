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

  std::int64_t q_width() const { return std::int64_t{n_heads} * head_dim; }
  std::int64_t kv_width() const { return std::int64_t{n_kv_heads} * head_dim; }

  // The whole model on one device.
  static RankShape whole(const ModelConfig& config) {
    return RankShape{config.hidden_size,     config.n_heads,    config.n_kv_heads,  config.head_dim,
                     config.ffn_hidden_size, config.vocab_size, config.rms_norm_eps};
  }
};

}  // namespace tern::engine
