#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/rope_config.h"

namespace tern::kernels {

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
