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

struct ModelConfig {
  std::string architecture;  // "llama", "qwen2", "qwen3"
  int n_layers = 0;
  int hidden_size = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;  // may differ from hidden_size / n_heads (qwen3)
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
