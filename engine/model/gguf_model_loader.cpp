// load_gguf_model: binds a GGUF file's tensors (llama.cpp's names) to ModelWeights.
#include <fmt/format.h>

#include "engine/model/model_weights.h"
#include "engine/model/weight_binding.h"

namespace tern::engine {
namespace {

constexpr TensorNames kGgufNames{
    .token_embedding = "token_embd.weight",
    .output_norm = "output_norm.weight",
    .output = "output.weight",
    .attn_norm = "blk.{}.attn_norm.weight",
    .wq = "blk.{}.attn_q.weight",
    .wk = "blk.{}.attn_k.weight",
    .wv = "blk.{}.attn_v.weight",
    .wo = "blk.{}.attn_output.weight",
    .ffn_norm = "blk.{}.ffn_norm.weight",
    .w_gate = "blk.{}.ffn_gate.weight",
    .w_up = "blk.{}.ffn_up.weight",
    .w_down = "blk.{}.ffn_down.weight",
    .bq = "blk.{}.attn_q.bias",
    .bk = "blk.{}.attn_k.bias",
    .bv = "blk.{}.attn_v.bias",
    .q_norm = "blk.{}.attn_q_norm.weight",
    .k_norm = "blk.{}.attn_k_norm.weight",
    .router = "blk.{}.ffn_gate_inp.weight",
    .selection_bias = "blk.{}.exp_probs_b.bias",
    .expert_gate = "blk.{}.ffn_gate_exps.weight",
    .expert_up = "blk.{}.ffn_up_exps.weight",
    .expert_down = "blk.{}.ffn_down_exps.weight",
    .shared_gate = "blk.{}.ffn_gate_shexp.weight",
    .shared_up = "blk.{}.ffn_up_shexp.weight",
    .shared_down = "blk.{}.ffn_down_shexp.weight",
    .q_a = "blk.{}.attn_q_a.weight",
    .q_a_norm = "blk.{}.attn_q_a_norm.weight",
    .q_b = "blk.{}.attn_q_b.weight",
    .kv_a = "blk.{}.attn_kv_a_mqa.weight",
    .kv_a_norm = "blk.{}.attn_kv_a_norm.weight",
    .kv_b = "blk.{}.attn_kv_b.weight",
    .k_b = "blk.{}.attn_k_b.weight",
    .v_b = "blk.{}.attn_v_b.weight",
};

std::optional<StoredTensor> stored_tensor(const GgufFile& gguf, const std::string& name) {
  const GgufTensorInfo* info = gguf.find_tensor(name);
  if (info == nullptr) return std::nullopt;
  StoredTensor stored;
  stored.type = info->type;
  stored.type_name = kernels::tensor_type_name(info->type);
  stored.dims.assign(info->shape.rbegin(), info->shape.rend());  // GGML lists the row length first
  stored.bytes = info->bytes;
  stored.data = info->data;
  return stored;
}

}  // namespace

const TensorNames& gguf_tensor_names() {
  return kGgufNames;
}

Expected<ModelWeights> load_gguf_model(GgufFile gguf) {
  Expected<ModelConfig> config = config_from_gguf(gguf);
  if (!config) return config.error();
  const TensorLookup lookup = [&gguf](const std::string& name) {
    return stored_tensor(gguf, name);
  };
  Expected<BoundWeights> bound = bind_weights(*config, kGgufNames, lookup, gguf.path());
  if (!bound) return bound.error();

  ModelWeights weights;
  weights.config_ = std::move(config).value();
  weights.config_.tied_embeddings = bound->tied;
  weights.token_embedding_ = bound->token_embedding;
  weights.output_norm_ = bound->output_norm;
  weights.output_ = bound->output;
  weights.layers_ = std::move(bound->layers);
  if (const GgufTensorInfo* freqs = gguf.find_tensor("rope_freqs.weight")) {
    const auto half = static_cast<std::int64_t>(weights.config_.head_dim / 2);
    if (freqs->type != kernels::TensorType::f32 ||
        freqs->shape != std::vector<std::int64_t>{half}) {
      return Error{fmt::format("{}: tensor 'rope_freqs.weight' must be F32 of shape [{}]",
                               gguf.path(), half)};
    }
    weights.rope_freq_factors_ =
        WeightTensor{freqs->type, 1, half, static_cast<std::size_t>(freqs->bytes), freqs->data};
  }
  weights.path_ = gguf.path();
  weights.gguf_ = std::move(gguf);  // the tensors point into its mapping, which does not move
  return weights;
}

}  // namespace tern::engine
