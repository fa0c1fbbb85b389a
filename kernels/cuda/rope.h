#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/rope_config.h"

TERN_CUDA_NAMESPACE_BEGIN

// apply_rope of kernels/cpu/rope.h on the device: rotates, in place, the first 2 * pairs
// dimensions of every head of every token by angle positions[token] * inverse_frequencies[i].
// x is [tokens][n_heads * head_dim] with rows row_stride floats apart; positions holds `tokens`
// int32 and inverse_frequencies `pairs` floats (rope_inverse_frequencies, computed on the host,
// so the frequency scaling exists once). Pointers are device memory.
// Returns cudaErrorInvalidValue without launching when a shape is out of range (tokens < 0,
// n_heads or head_dim < 1, pairs < 1 or over kMaxRopePairs, 2 * pairs > head_dim,
// row_stride < n_heads * head_dim, a null pointer), cudaSuccess for no tokens, else the launch
// status.
inline constexpr int kMaxRopePairs = 512;  // the CPU kernel's bound; 4 KiB of shared memory

cudaError_t launch_rope(float* x, long long tokens, long long row_stride, int n_heads, int head_dim,
                        const std::int32_t* positions, const float* inverse_frequencies, int pairs,
                        RopeLayout layout, cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
