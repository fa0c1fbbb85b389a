#pragma once

#include <optional>

namespace tern::kernels {

// How a model applies RoPE, as its config says. The one definition: the engine's ModelConfig holds
// these and every backend's kernels take them, so nothing converts between copies.

// Which dimensions of a head RoPE rotates together.
enum class RopeLayout {
  interleaved,  // pairs (2i, 2i+1): GGUF llama, whose converter permutes Q/K rows into this order
  neox,         // pairs (i, i + rotary_dim/2): HF rotate_half, GGUF qwen2/qwen3
};

// Context-extension scaling of the rotary frequencies (HF config "rope_scaling"), with HF's
// defaults for the keys a config leaves out.
struct RopeScaling {
  enum class Type { none, linear, llama3, yarn } type = Type::none;
  float factor = 1;
  // llama3
  float low_freq_factor = 1;
  float high_freq_factor = 4;
  // llama3 and yarn: the context the model was pretrained on (for yarn the readers default it to
  // the model's context, as HF does)
  int original_max_position = 8192;
  // yarn: the correction range runs from the dimension that turns beta_fast times over the
  // original context to the one that turns beta_slow times.
  float beta_fast = 32;
  float beta_slow = 1;
  // yarn's magnitude scales (DeepSeek): cos and sin get get_mscale(factor, mscale) /
  // get_mscale(factor, mscale_all_dim) when both are nonzero, else get_mscale(factor) (an mscale
  // of 1). 0 stands for absent: HF tests `mscale and mscale_all_dim`, so an absent mscale with
  // mscale_all_dim set is not the same as mscale 1.
  float mscale = 0;
  float mscale_all_dim = 0;
  std::optional<float> attention_factor;  // yarn: overrides the computed one when stated
};

}  // namespace tern::kernels
