#pragma once

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/matmul_types.h"

TERN_CUDA_NAMESPACE_BEGIN

// Quantizes x ([tokens][cols] f32) into out ([tokens][cols / 32] BlockQ8_1), the activations of
// the integer GEMV/GEMM (Q8_0, Q4_0, Q4_K, Q6_K weights). Pointers are device memory.
// cudaErrorInvalidValue, with nothing launched, when cols is not a positive multiple of 32,
// tokens is negative or a pointer is null or misaligned.
cudaError_t launch_quantize_activations_q8_1(const float* x, int tokens, int cols, BlockQ8_1* out,
                                             cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
