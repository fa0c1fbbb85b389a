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

// A format's tensor names; "{}" stands for the layer index.
struct TensorNames {
  std::string_view token_embedding, output_norm, output;
  std::string_view attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
  std::string_view bq, bk, bv, q_norm, k_norm;
};

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
