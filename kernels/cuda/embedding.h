#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/tensor_type.h"

TERN_CUDA_NAMESPACE_BEGIN

// out[t][:] = row token_ids[t] of the embedding table [vocab][hidden], dequantized to float, for
// tables in F32, F16, BF16, Q8_0, Q4_0, Q4_K or Q6_K (GGUF layouts, rows back to back). An id
// outside [0, vocab) gives a row of zeros and reads nothing: the launcher cannot see device ids,
// and zeros make such a token visible downstream (the engine validates ids before it launches).
// table, token_ids and out are device memory. Returns cudaErrorInvalidValue without launching
// when tokens < 0, hidden <= 0, vocab <= 0, the type is not one of the above, or hidden is not a
// whole number of the type's blocks (32 or 256 elements); tokens == 0 launches nothing.
cudaError_t launch_embedding_gather(TensorType type, const void* table, long long vocab, int hidden,
                                    const std::int32_t* token_ids, int tokens, float* out,
                                    cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
