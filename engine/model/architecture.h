#pragma once

#include <span>
#include <string>
#include <string_view>

#include "engine/model/model_graph.h"

namespace tern::engine {

// What the loaders and the backends need to know about a supported architecture: the one place
// a new architecture is added (docs/architecture.md, "Adding an architecture"). Names are
// GGUF's `general.architecture` values; Hugging Face names map onto them.
struct ArchitectureInfo {
  std::string_view name;  // "llama", "qwen2", "qwen3"
  bool qkv_bias;          // Q/K/V projections always carry a bias (qwen2)
  bool qk_norm;           // per-head RMSNorm of Q and K before RoPE (qwen3)
  ModelGraph graph;       // its forward pass over the op table
};

const ArchitectureInfo* find_architecture(std::string_view gguf_name);
// From config.json: `model_type`, else the first of `architectures` that we know.
const ArchitectureInfo* find_hf_architecture(std::string_view model_type,
                                             std::span<const std::string_view> architectures);
std::string supported_architectures();  // "llama (Llama 2/3, ...), qwen2, ..."

}  // namespace tern::engine
