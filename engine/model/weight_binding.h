#pragma once

// Internal to engine/model: turns stored tensors (GGUF or safetensors) into the checked
// WeightTensors of a ModelWeights, with one error naming the file, tensor and reason.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expected.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace tern::engine {

// A tensor as a file stores it, in a format-neutral form.
struct StoredTensor {
  std::optional<kernels::TensorType> type;  // unset for dtypes we cannot compute with
  std::string_view type_name;
  std::vector<std::int64_t> dims;  // outermost first: a matrix is [rows, cols]
  std::uint64_t bytes = 0;
  const std::byte* data = nullptr;
};

// A format's tensor names; "{}" stands for the layer index, "{x}" for an expert's.
struct TensorNames {
  std::string_view token_embedding, output_norm, output;
  std::string_view attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
  std::string_view bq, bk, bv, q_norm, k_norm;
  // Mixture of experts. With "{x}" in expert_gate each expert has its own tensors (HF); without,
  // they are stacked in one 3-D tensor, experts outermost (GGUF).
  std::string_view router, selection_bias, expert_gate, expert_up, expert_down;
  std::string_view shared_gate, shared_up, shared_down;
  // Latent attention; k_b/v_b are the split form of kv_b, per head stacked in 3-D (GGUF only).
  std::string_view q_a, q_a_norm, q_b, kv_a, kv_a_norm, kv_b, k_b, v_b;
};

// A pattern of TensorNames with the layer (and expert) index filled in.
std::string tensor_name(std::string_view pattern, int layer, int expert = 0);

// llama.cpp's GGUF names, which the loader reads and `tern quantize` writes.
const TensorNames& gguf_tensor_names();

using TensorLookup = std::function<std::optional<StoredTensor>(const std::string& name)>;

struct BoundWeights {
  WeightTensor token_embedding, output_norm, output;
  std::vector<LayerWeights> layers;
  bool tied = false;
};

// Binds every tensor `config` calls for. The output projection falls back to the embedding
// (and, for checkpoints that store only the output, the embedding to the output).
// `source` names the file or directory in errors.
Expected<BoundWeights> bind_weights(const ModelConfig& config, const TensorNames& names,
                                    const TensorLookup& lookup, const std::string& source);

}  // namespace tern::engine
