#include "engine/model/architecture.h"

#include <array>

#include "engine/model/llama_graph.h"

namespace tern::engine {
namespace {

constexpr std::array<ArchitectureInfo, 5> kArchitectures{{
    {"llama", false, false, &llama_graph},
    {"qwen2", true, false, &llama_graph},
    {"qwen3", false, true, &llama_graph},
    {"qwen3moe", false, true, &llama_graph},
    {"deepseek2", false, false, &llama_graph},
}};

struct HfName {
  std::string_view hf;
  std::string_view gguf;
};

// Mistral is the Llama graph (its sliding window only matters past the window length); Mixtral
// is Llama with experts, as llama.cpp's GGUF files have it.
constexpr std::array<HfName, 14> kHfNames{{
    {"llama", "llama"},
    {"mistral", "llama"},
    {"mixtral", "llama"},
    {"qwen2", "qwen2"},
    {"qwen3", "qwen3"},
    {"qwen3_moe", "qwen3moe"},
    {"deepseek_v3", "deepseek2"},
    {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "llama"},
    {"MixtralForCausalLM", "llama"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen3ForCausalLM", "qwen3"},
    {"Qwen3MoeForCausalLM", "qwen3moe"},
    {"DeepseekV3ForCausalLM", "deepseek2"},
}};

const ArchitectureInfo* from_hf_name(std::string_view name) {
  for (const HfName& entry : kHfNames) {
    if (entry.hf == name) return find_architecture(entry.gguf);
  }
  return nullptr;
}

}  // namespace

const ArchitectureInfo* find_architecture(std::string_view gguf_name) {
  for (const ArchitectureInfo& info : kArchitectures) {
    if (info.name == gguf_name) return &info;
  }
  return nullptr;
}

const ArchitectureInfo* find_hf_architecture(std::string_view model_type,
                                             std::span<const std::string_view> architectures) {
  if (const ArchitectureInfo* info = from_hf_name(model_type)) return info;
  for (std::string_view name : architectures) {
    if (const ArchitectureInfo* info = from_hf_name(name)) return info;
  }
  return nullptr;
}

std::string supported_architectures() {
  return "llama (Llama 2/3, TinyLlama, Mistral, Mixtral), qwen2, qwen3, qwen3moe (Qwen3-MoE), "
         "deepseek2 (DeepSeek-V3)";
}

}  // namespace tern::engine
