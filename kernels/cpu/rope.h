#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/rope_config.h"

namespace tern::kernels {

// Inverse frequencies theta^(-2i/rotary_dim) for i < rotary_dim/2, scaled: linear divides every
// frequency by factor; llama3 follows HF's _compute_llama3_parameters (short wavelengths kept,
// long ones divided by factor, a smooth blend between); yarn follows _compute_yarn_parameters
// (dimensions below the correction range kept, those above divided by factor, a linear ramp
// between). Computed in double, rounded once.
std::vector<float> rope_inverse_frequencies(int rotary_dim, float theta,
                                            const RopeScaling& scaling);

// What HF multiplies cos and sin by (its attention_factor): for yarn the stated one, else
// get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) when both are nonzero, else
// get_mscale(factor), where get_mscale(s, m) = s <= 1 ? 1 : 0.1 m ln(s) + 1. 1 for other types.
// Pass it to apply_rope as the magnitude.
double rope_attention_factor(const RopeScaling& scaling);

// DeepSeek's extra factor on the attention softmax scale (on top of 1/sqrt(head_dim)):
// get_mscale(factor, mscale_all_dim)^2 for yarn with mscale_all_dim nonzero, else 1.
double rope_softmax_scale_multiplier(const RopeScaling& scaling);

// Rotates, in place, the first 2 * inverse_frequencies.size() dimensions of every head of every
// token by angle positions[token] * inverse_frequencies[i]. x is [tokens][n_heads * head_dim] with
// rows `row_stride` floats apart. Angles, cosines and sines are taken in double, so precision does
// not fall off at large positions. Each token's result depends only on its own row and position.
// cos and sin are multiplied by magnitude (rope_attention_factor) in double before rounding; a
// magnitude of 1 changes no bit.
void apply_rope(float* x, std::int64_t tokens, std::int64_t row_stride, int n_heads, int head_dim,
                const std::int32_t* positions, std::span<const float> inverse_frequencies,
                RopeLayout layout, float magnitude = 1.0f);

// apply_rope in two halves, so that a forward pass computes each token's angles once for all its
// layers: rope_angles writes cosines and sines [tokens][inverse_frequencies.size()] (the values
// apply_rope uses), and rotate_pairs rotates with them, bit for bit as apply_rope does.
void rope_angles(const std::int32_t* positions, std::int64_t tokens,
                 std::span<const float> inverse_frequencies, float magnitude, float* cosines,
                 float* sines);
void rotate_pairs(float* x, std::int64_t tokens, std::int64_t row_stride, int n_heads, int head_dim,
                  const float* cosines, const float* sines, std::size_t pairs, RopeLayout layout);

}  // namespace tern::kernels
