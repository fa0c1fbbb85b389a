#pragma once

// Element-wise kernels of the decoder's FFN and residual stream, shared source: nvcc compiles
// them through elementwise.cu, the host compiler against the SIMT emulator (docs/gpu.md) in
// tests/unit/simt/elementwise_emulated_test.cpp. One thread per element, any block size.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// out[i] = silu(gate[i]) * up[i], with the CPU kernel's formula g / (1 + exp(-g)) * u.
// out may be gate or up: the FFN writes it over gate (each element is read before written).
__global__ void silu_mul_kernel(const float* gate, const float* up, float* out, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  out[i] = g / (1.0f + expf(-g)) * up[i];
}

// into[i] += from[i]: the residual add.
__global__ void add_kernel(float* __restrict__ into, const float* __restrict__ from, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  into[i] += from[i];
}

TERN_CUDA_NAMESPACE_END
