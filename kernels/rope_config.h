#pragma once

namespace tern::kernels {

// How a model applies RoPE, as its config says. The one definition: the engine's ModelConfig holds
// these and every backend's kernels take them, so nothing converts between copies.

// Which dimensions of a head RoPE rotates together.
enum class RopeLayout {
  interleaved,  // pairs (2i, 2i+1): GGUF llama, whose converter permutes Q/K rows into this order
  neox,         // pairs (i, i + rotary_dim/2): HF rotate_half, GGUF qwen2/qwen3
};

// Context-extension scaling of the rotary frequencies (HF config "rope_scaling").
struct RopeScaling {
  enum class Type { none, linear, llama3 } type = Type::none;
  float factor = 1;
  float low_freq_factor = 1;
  float high_freq_factor = 4;
  int original_max_position = 8192;
};

}  // namespace tern::kernels
