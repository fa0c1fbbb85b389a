#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/expected.h"
#include "kernels/rope_config.h"

namespace tern::engine {

class GgufFile;

// How Q/K pairs are laid out for RoPE. GGUF `llama` files store Q/K rows permuted so that pairs
// are adjacent (interleaved); HF checkpoints and GGUF qwen2/qwen3 rotate halves (neox). The
// kernels' own types, so a backend hands them over as they are.
using kernels::RopeLayout;
using RopeScalingConfig = kernels::RopeScaling;

// Sampling defaults the model's authors ship (generation_config.json, GGUF general.sampling.*);
// a request's own values win.
struct GenerationDefaults {
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int> top_k;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
};

// A mixture-of-experts FFN (Mixtral, Qwen3-MoE, DeepSeek-V3). n_experts == 0: a dense model.
struct MoeConfig {
  enum class Scoring { softmax, sigmoid };
  int n_experts = 0;
  int experts_per_token = 0;
  int expert_ffn = 0;  // each routed expert's FFN width (moe_intermediate_size)
  Scoring scoring = Scoring::softmax;
  bool normalize_weights = true;  // the selected weights renormalised to sum 1
  int n_groups = 1;               // DeepSeek-V3 group-limited routing; 1 = off
  int groups_per_token = 1;
  float weight_scale = 1.0f;  // routed_scaling_factor
  int shared_expert_ffn = 0;  // the shared experts' FFN width together; 0 = none
  // Which layers are dense: the first `first_dense_layers` (DeepSeek), every layer l with
  // (l + 1) % sparse_step != 0, and those listed in `dense_layers` (Qwen3-MoE mlp_only_layers).
  int first_dense_layers = 0;
  int sparse_step = 1;
  std::vector<int> dense_layers;

  bool enabled() const { return n_experts > 0; }
  bool is_moe_layer(int layer) const;
};

// Multi-head latent attention (DeepSeek-V2/V3). kv_lora_rank == 0: ordinary attention.
struct LatentAttentionConfig {
  int q_lora_rank = 0;  // 0: a plain q_proj
  int kv_lora_rank = 0;
  int nope_head_dim = 0;   // qk_nope_head_dim
  int rope_head_dim = 0;   // qk_rope_head_dim: the rotated part, shared by all heads in K
  int value_head_dim = 0;  // v_head_dim

  bool enabled() const { return kv_lora_rank > 0; }
  // Values cached per token and layer: the latent plus the rope key.
  int cached_width() const { return kv_lora_rank + rope_head_dim; }
};

struct ModelConfig {
  std::string architecture;  // "llama", "qwen2", "qwen3", "qwen3moe", "deepseek2"
  int n_layers = 0;
  int hidden_size = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;  // may differ from hidden_size / n_heads (qwen3); nope + rope with MLA
  int ffn_hidden_size = 0;
  int vocab_size = 0;
  int context_length = 0;
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScalingConfig rope_scaling;
  RopeLayout rope_layout = RopeLayout::neox;
  bool tied_embeddings = false;  // output projection is the token embedding
  bool qkv_bias = false;
  bool qk_norm = false;
  MoeConfig moe;
  LatentAttentionConfig latent;
  std::vector<int> eos_token_ids;  // every id that ends generation (eos, eot, eom)
  int bos_token_id = -1;
  GenerationDefaults generation;
};

// Hyperparameters from GGUF metadata. tied_embeddings, qkv_bias and qk_norm follow the tensors
// present; the weight loader cross-checks the rest against tensor shapes.
Expected<ModelConfig> config_from_gguf(const GgufFile& gguf);
// From `config.json` and, when present, `generation_config.json` in a Hugging Face directory.
Expected<ModelConfig> config_from_hf_directory(const std::string& directory);
// Positive sizes, heads divisible by KV heads, even head_dim, finite eps; `source` names the file.
Status validate_config(const ModelConfig& config, const std::string& source);

}  // namespace tern::engine
