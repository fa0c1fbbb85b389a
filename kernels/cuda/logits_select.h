#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

// The largest k launch_top_k takes: enough for top-k sampling (llama.cpp's default is 40).
inline constexpr int kMaxTopK = 64;

// Device-side sampling reductions over rows of [rows][vocab] float logits (device memory). The
// order is total and the same for both: larger value first, any NaN above every number (a NaN
// logit is a bug upstream; ranking it first makes it visible), -0 equal to +0, and among equal
// values the lower index first. Results do not depend on the thread schedule or on the other rows.

// indices[r] = the index of row r's first maximum. Returns cudaErrorInvalidValue without launching
// when rows < 0 or vocab <= 0; rows == 0 launches nothing.
cudaError_t launch_argmax(const float* logits, int rows, int vocab, std::int32_t* indices,
                          cudaStream_t stream);

// values[r][0..k) and indices[r][0..k) = row r's k best logits in the order above, best first,
// values with their exact bits. Returns cudaErrorInvalidValue without launching when rows < 0,
// vocab <= 0, k < 1, k > kMaxTopK or k > vocab (callers clamp k to the vocabulary, so every output
// slot is written); rows == 0 launches nothing.
cudaError_t launch_top_k(const float* logits, int rows, int vocab, int k, float* values,
                         std::int32_t* indices, cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
