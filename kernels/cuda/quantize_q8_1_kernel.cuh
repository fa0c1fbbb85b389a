#pragma once

// Quantizes f32 activations into Q8_1 blocks for the integer GEMV/GEMM, shared source (nvcc via
// quantize_q8_1.cu, the host compiler against the SIMT emulator). The arithmetic is the CPU
// matmul's Q8 activation quantization (kernels/cpu/matmul_scalar.cpp, quantize_q8): d = amax /
// 127, q = round-to-nearest-even(v * (1 / d)), so both give the same quants and scale.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/matmul_types.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// One warp per block of 32 consecutive values of x ([tokens][cols], cols a multiple of 32, so
// the blocks of all tokens are simply the consecutive 32-value groups).
__global__ void quantize_q8_1_kernel(const float* __restrict__ x, BlockQ8_1* __restrict__ out,
                                     long long blocks) {
  const long long block = static_cast<long long>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (block >= blocks) return;  // the whole warp: every lane of a block exists
  const int lane = threadIdx.x % 32;
  const float v = x[block * 32 + lane];
  // max and integer sums are exact, so the butterfly order does not matter here.
  float amax = fabsf(v);
  for (int offset = 16; offset > 0; offset /= 2)
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  const float d = amax / 127.0f;
  const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
  const int q = static_cast<int>(rintf(v * inverse));
  int sum = q;
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  out[block].qs[lane] = static_cast<signed char>(q);
  if (lane == 0) {
    out[block].d = d;
    out[block].sum = sum;
  }
}

TERN_CUDA_NAMESPACE_END
