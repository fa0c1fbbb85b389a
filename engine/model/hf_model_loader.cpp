// load_hf_model: binds a Hugging Face checkpoint's tensors (transformers' names) to ModelWeights.
#include "engine/model/model_weights.h"
#include "engine/model/weight_binding.h"

namespace tern::engine {
namespace {

constexpr TensorNames kHfNames{
    .token_embedding = "model.embed_tokens.weight",
    .output_norm = "model.norm.weight",
    .output = "lm_head.weight",
    .attn_norm = "model.layers.{}.input_layernorm.weight",
    .wq = "model.layers.{}.self_attn.q_proj.weight",
    .wk = "model.layers.{}.self_attn.k_proj.weight",
    .wv = "model.layers.{}.self_attn.v_proj.weight",
    .wo = "model.layers.{}.self_attn.o_proj.weight",
    .ffn_norm = "model.layers.{}.post_attention_layernorm.weight",
    .w_gate = "model.layers.{}.mlp.gate_proj.weight",
    .w_up = "model.layers.{}.mlp.up_proj.weight",
    .w_down = "model.layers.{}.mlp.down_proj.weight",
    .bq = "model.layers.{}.self_attn.q_proj.bias",
    .bk = "model.layers.{}.self_attn.k_proj.bias",
    .bv = "model.layers.{}.self_attn.v_proj.bias",
    .q_norm = "model.layers.{}.self_attn.q_norm.weight",
    .k_norm = "model.layers.{}.self_attn.k_norm.weight",
    .router = "model.layers.{}.mlp.gate.weight",
    .selection_bias = "model.layers.{}.mlp.gate.e_score_correction_bias",
    .expert_gate = "model.layers.{}.mlp.experts.{x}.gate_proj.weight",
    .expert_up = "model.layers.{}.mlp.experts.{x}.up_proj.weight",
    .expert_down = "model.layers.{}.mlp.experts.{x}.down_proj.weight",
    .shared_gate = "model.layers.{}.mlp.shared_experts.gate_proj.weight",
    .shared_up = "model.layers.{}.mlp.shared_experts.up_proj.weight",
    .shared_down = "model.layers.{}.mlp.shared_experts.down_proj.weight",
    .q_a = "model.layers.{}.self_attn.q_a_proj.weight",
    .q_a_norm = "model.layers.{}.self_attn.q_a_layernorm.weight",
    .q_b = "model.layers.{}.self_attn.q_b_proj.weight",
    .kv_a = "model.layers.{}.self_attn.kv_a_proj_with_mqa.weight",
    .kv_a_norm = "model.layers.{}.self_attn.kv_a_layernorm.weight",
    .kv_b = "model.layers.{}.self_attn.kv_b_proj.weight",
};

// Mixtral keeps its experts under block_sparse_moe, as w1 (gate), w3 (up) and w2 (down).
constexpr TensorNames mixtral_names() {
  TensorNames names = kHfNames;
  names.router = "model.layers.{}.block_sparse_moe.gate.weight";
  names.expert_gate = "model.layers.{}.block_sparse_moe.experts.{x}.w1.weight";
  names.expert_up = "model.layers.{}.block_sparse_moe.experts.{x}.w3.weight";
  names.expert_down = "model.layers.{}.block_sparse_moe.experts.{x}.w2.weight";
  return names;
}
constexpr TensorNames kMixtralNames = mixtral_names();

std::optional<StoredTensor> stored_tensor(const SafetensorsCheckpoint& checkpoint,
                                          const std::string& name) {
  const SafetensorsTensorInfo* info = checkpoint.find_tensor(name);
  if (info == nullptr) return std::nullopt;
  StoredTensor stored;
  stored.type = info->type;
  stored.type_name = info->dtype;
  stored.dims = info->shape;
  stored.bytes = info->bytes;
  stored.data = info->data;
  return stored;
}

}  // namespace

Expected<ModelWeights> load_hf_model(const std::string& directory,
                                     SafetensorsCheckpoint checkpoint) {
  Expected<ModelConfig> config = config_from_hf_directory(directory);
  if (!config) return config.error();
  // Errors name the one file when there is one, else the directory.
  const std::string source =
      checkpoint.files().size() == 1 ? checkpoint.files()[0].path() : directory;
  const TensorLookup lookup = [&checkpoint](const std::string& name) {
    return stored_tensor(checkpoint, name);
  };
  const bool mixtral = config->architecture == "llama" && config->moe.enabled();
  Expected<BoundWeights> bound =
      bind_weights(*config, mixtral ? kMixtralNames : kHfNames, lookup, source);
  if (!bound) return bound.error();

  ModelWeights weights;
  weights.config_ = std::move(config).value();
  weights.config_.tied_embeddings = bound->tied;
  weights.token_embedding_ = bound->token_embedding;
  weights.output_norm_ = bound->output_norm;
  weights.output_ = bound->output;
  weights.layers_ = std::move(bound->layers);
  weights.path_ = directory;
  weights.safetensors_ = std::move(checkpoint);  // mappings do not move with it
  return weights;
}

}  // namespace tern::engine
