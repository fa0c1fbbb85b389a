#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expected.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/safetensors_checkpoint.h"
#include "kernels/tensor_type.h"

namespace tern::engine {

// One weight, used in place from the file mapping. Row-major [rows][cols]; 1-D tensors (norms,
// biases) have rows = 1. For block-quantized types a row is cols / block_elements blocks.
struct WeightTensor {
  kernels::TensorType type = kernels::TensorType::f32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::size_t row_bytes = 0;
  const std::byte* data = nullptr;
};

// Matrices are [out_features][in_features]: wq is [n_heads*head_dim][hidden], wk and wv
// [n_kv_heads*head_dim][hidden], wo [hidden][n_heads*head_dim], w_gate and w_up [ffn][hidden],
// w_down [hidden][ffn]. Norm weights and biases are 1-D, stored as the file has them (F32 in
// GGUF, often F16/BF16 in HF checkpoints).
// A mixture-of-experts FFN. Expert e's matrices are views into the file: one slice of a stacked
// 3-D tensor (GGUF) or its own tensor (HF), alike to a backend.
struct ExpertWeights {
  WeightTensor router;                         // [n_experts][hidden]
  std::optional<WeightTensor> selection_bias;  // [n_experts]: DeepSeek-V3's e_score_correction_bias
  std::vector<WeightTensor> gate, up, down;    // per expert: [expert_ffn][hidden], down transposed
  std::optional<WeightTensor> shared_gate, shared_up, shared_down;  // [shared_ffn][hidden], ...
};

// Multi-head latent attention (DeepSeek-V2/V3). kv_b_proj is either whole, [n_heads * (nope + v)]
// [kv_lora], or split as llama.cpp has written it since 2025: k_b per head [kv_lora][nope] (the
// absorbed form's query projection, already transposed) and v_b per head [v][kv_lora]. v_b is
// always filled, as row views of kv_b when that is what the file has.
struct LatentAttentionWeights {
  std::optional<WeightTensor> q_a, q_a_norm, q_b;  // with q_lora_rank; else LayerWeights::wq
  WeightTensor kv_a;                               // [kv_lora + rope][hidden]
  WeightTensor kv_a_norm;                          // [kv_lora]
  std::optional<WeightTensor> kv_b;
  std::vector<WeightTensor> k_b, v_b;
};

// A dense layer has w_gate/w_up/w_down and no experts; a mixture-of-experts layer the reverse.
// With latent attention wq is set only without q_lora_rank, and wk/wv never.
struct LayerWeights {
  WeightTensor attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
  std::optional<WeightTensor> bq, bk, bv;      // qwen2 (config.qkv_bias)
  std::optional<WeightTensor> q_norm, k_norm;  // qwen3 (config.qk_norm): [head_dim]
  std::optional<ExpertWeights> experts;
  std::optional<LatentAttentionWeights> latent;
};

// A loaded model: its configuration and every weight, checked for presence, shape and type.
// Move-only; owns the file mappings the tensors point into.
class ModelWeights {
 public:
  ModelWeights(ModelWeights&&) noexcept = default;
  ModelWeights& operator=(ModelWeights&&) noexcept = default;
  ModelWeights(const ModelWeights&) = delete;
  ModelWeights& operator=(const ModelWeights&) = delete;

  const ModelConfig& config() const { return config_; }
  const WeightTensor& token_embedding() const { return token_embedding_; }  // [vocab][hidden]
  const WeightTensor& output_norm() const { return output_norm_; }
  const WeightTensor& output() const { return output_; }  // == token_embedding() when tied
  std::span<const LayerWeights> layers() const { return layers_; }
  // Llama 3.1-style GGUF files carry RoPE scaling as per-frequency divisors [head_dim / 2]
  // (`rope_freqs.weight`, F32): frequency i is divided by it. nullptr when absent.
  const WeightTensor* rope_freq_factors() const {
    return rope_freq_factors_ ? &*rope_freq_factors_ : nullptr;
  }

  std::string_view source_format() const { return gguf_ ? "gguf" : "safetensors"; }
  const GgufFile* gguf() const { return gguf_ ? &*gguf_ : nullptr; }  // nullptr for HF dirs
  const std::string& path() const { return path_; }
  std::uint64_t file_bytes() const;  // all mapped weight files together

 private:
  ModelWeights() = default;
  std::vector<std::span<const std::byte>> mapped_bytes() const;

  friend Expected<ModelWeights> load_model(const std::string& path);
  friend Expected<ModelWeights> load_gguf_model(GgufFile gguf);
  friend Expected<ModelWeights> load_hf_model(const std::string& directory,
                                              SafetensorsCheckpoint checkpoint);

  ModelConfig config_;
  WeightTensor token_embedding_, output_norm_, output_;
  std::vector<LayerWeights> layers_;
  std::optional<WeightTensor> rope_freq_factors_;
  std::optional<GgufFile> gguf_;
  std::optional<SafetensorsCheckpoint> safetensors_;
  std::string path_;
};

// Every tensor of a layer that the file holds (data != nullptr): norms, attention (plain or
// latent), the dense FFN or the router and shared experts, and with `routed_experts` each
// routed expert's matrices.
std::vector<const WeightTensor*> layer_tensors(const LayerWeights& layer, bool routed_experts);

// Loads a .gguf file or a Hugging Face directory (config.json + safetensors), or makes the random
// model a `random:SHAPE:TYPE[:SEED]` spec names (random_model.h), pre-faults the mapping with
// progress logging, and logs the load time and resident memory.
Expected<ModelWeights> load_model(const std::string& path);
// The same without touching the disk or logging: a GGUF already parsed, or an HF directory's
// config.json/generation_config.json with a checkpoint already opened (tests, fuzzing).
Expected<ModelWeights> load_gguf_model(GgufFile gguf);
Expected<ModelWeights> load_hf_model(const std::string& directory,
                                     SafetensorsCheckpoint checkpoint);

}  // namespace tern::engine
