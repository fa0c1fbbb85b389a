#pragma once

// Rounds f32 activations to the 16-bit float type of BF16 or F16 weights, the operands of the
// tensor-core matmul (float_mma_kernel.cuh), shared source (nvcc via round_activations.cu, the
// host compiler against the SIMT emulator). Round to nearest even, as kernels/cpu/half.h rounds:
// the same bits for every finite value (a NaN stays a NaN).

#include <cstdint>

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"
#include "kernels/tensor_type.h"

TERN_CUDA_NAMESPACE_BEGIN

// One thread per value; grid ceil(n / blockDim.x).
template <TensorType kType>
__global__ void round_activations_kernel(const float* __restrict__ x,
                                         std::uint16_t* __restrict__ out, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if constexpr (kType == TensorType::bf16) {
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i]));
  } else {
    out[i] = __half_as_ushort(__float2half_rn(x[i]));
  }
}

TERN_CUDA_NAMESPACE_END
