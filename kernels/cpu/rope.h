#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tern::kernels {

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

// Inverse frequencies theta^(-2i/rotary_dim) for i < rotary_dim/2, scaled: linear divides every
// frequency by factor; llama3 follows HF's _compute_llama3_parameters (short wavelengths kept,
// long ones divided by factor, a smooth blend between). Computed in double, rounded once.
std::vector<float> rope_inverse_frequencies(int rotary_dim, float theta,
                                            const RopeScaling& scaling);

// Rotates, in place, the first 2 * inverse_frequencies.size() dimensions of every head of every
// token by angle positions[token] * inverse_frequencies[i]. x is [tokens][n_heads * head_dim] with
// rows `row_stride` floats apart. Angles, cosines and sines are taken in double, so precision does
// not fall off at large positions. Each token's result depends only on its own row and position.
void apply_rope(float* x, std::int64_t tokens, std::int64_t row_stride, int n_heads, int head_dim,
                const std::int32_t* positions, std::span<const float> inverse_frequencies,
                RopeLayout layout);

}  // namespace tern::kernels
