#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/tensor_type.h"

TERN_CUDA_NAMESPACE_BEGIN

// Rounds x ([tokens][cols] f32) to `type` (BF16 or F16) into out ([tokens][cols], 16-bit):
// the activations of the tensor-core matmul of BF16 and F16 weights (uses_float_mma,
// matmul_types.h). Pointers are device memory. cudaErrorInvalidValue, with nothing launched, for
// another type, negative sizes, or a pointer that is null or misaligned.
cudaError_t launch_round_activations(const float* x, int tokens, int cols, TensorType type,
                                     std::uint16_t* out, cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
