#pragma once

// Rotary position embeddings, shared source: nvcc compiles it through rope.cu, the host compiler
// against the SIMT emulator (docs/gpu.md).

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// cos and sin of a double angle, rounded to float, without CUDA's double sin/cos: their
// Payne-Hanek path for huge arguments keeps a table in local memory, which the build refuses.
// The angle is reduced by pi/2 in three fused steps (Cody-Waite with fdlibm's 33-bit pieces of
// pi/2; each fma is exact before its one rounding), so the reduced argument is within ~1e-15 of
// the exact one for |angle| < 2^40; fdlibm's minimax polynomials on [-pi/4, pi/4] are within
// ~1 ulp of double. The float results are the CPU's (glibc's double cos/sin, rounded) but where
// the double value lies within ~1e-15 of a float rounding boundary: then 1 float ulp apart.
struct CosSin {
  float cos;
  float sin;
};

__device__ __forceinline__ CosSin rope_cos_sin(double angle) {
  constexpr double kTwoOverPi = 6.36619772367581382433e-01;
  constexpr double kPiOver2Part1 = 1.57079632673412561417e+00;
  constexpr double kPiOver2Part2 = 6.07710050630396597660e-11;
  constexpr double kPiOver2Part3 = 2.02226624871116645580e-21;
  const double quadrant = rint(angle * kTwoOverPi);
  double r = fma(-quadrant, kPiOver2Part1, angle);
  r = fma(-quadrant, kPiOver2Part2, r);
  r = fma(-quadrant, kPiOver2Part3, r);
  const double z = r * r;
  const double sine =
      r + r * z *
              (-1.66666666666666324348e-01 +
               z * (8.33333333332248946124e-03 +
                    z * (-1.98412698298579493134e-04 +
                         z * (2.75573137070700676789e-06 + z * (-2.50507602534068634195e-08 +
                                                                z * 1.58969099521155010221e-10)))));
  const double cosine =
      1.0 - 0.5 * z +
      z * z *
          (4.16666666666666019037e-02 +
           z * (-1.38888888888741095749e-03 +
                z * (2.48015872894767294178e-05 +
                     z * (-2.75573143513906633035e-07 +
                          z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
  // angle = quadrant * pi/2 + r: rotate (cos r, sin r) by quadrant quarter turns.
  switch (static_cast<long long>(quadrant) & 3) {
    case 0:
      return {static_cast<float>(cosine), static_cast<float>(sine)};
    case 1:
      return {static_cast<float>(-sine), static_cast<float>(cosine)};
    case 2:
      return {static_cast<float>(-cosine), static_cast<float>(-sine)};
    default:
      return {static_cast<float>(sine), static_cast<float>(-cosine)};
  }
}

// Rotates, in place, dimension pairs of one token's heads: block (token, chunk) rotates the
// (head, pair) items chunk * kThreads .. + kThreads of row `token`, one per thread. neox pairs
// dimension i with i + pairs, interleaved 2i with 2i + 1; dimensions from 2 * pairs on (a partial
// rotary width) are left alone. The block first tabulates the token's cosines and sines in shared
// memory, [pairs] cosines then [pairs] sines.
//
// The angle and its cosine and sine are taken in double, as the CPU kernel (kernels/cpu/rope.cpp)
// does: a float angle at position p is off by up to p * 2^-24 radians (2.4e-4 at 4096, 7.8e-3 at
// 131072), which would be the error of every rotated value at long context. It costs `pairs`
// double cos/sin (rope_cos_sin) per block, a few per thread.
template <int kThreads>
__global__ void rope_kernel(float* x, long long row_stride, int n_heads, int head_dim,
                            const int* __restrict__ positions,
                            const float* __restrict__ inverse_frequencies, int pairs, bool neox) {
  TERN_DYNAMIC_SHARED(float, table);
  const long long token = blockIdx.x;
  const double position = positions[token];
  for (int i = threadIdx.x; i < pairs; i += kThreads) {
    const CosSin rotation = rope_cos_sin(position * static_cast<double>(inverse_frequencies[i]));
    table[i] = rotation.cos;
    table[pairs + i] = rotation.sin;
  }
  __syncthreads();
  const int item = static_cast<int>(blockIdx.y) * kThreads + static_cast<int>(threadIdx.x);
  if (item >= n_heads * pairs) return;
  const int head = item / pairs;
  const int pair = item % pairs;
  float* dims = x + token * row_stride + static_cast<long long>(head) * head_dim;
  const int first = neox ? pair : 2 * pair;
  const int second = neox ? pair + pairs : 2 * pair + 1;
  const float a = dims[first];
  const float b = dims[second];
  const float cosine = table[pair];
  const float sine = table[pairs + pair];
  dims[first] = a * cosine - b * sine;
  dims[second] = a * sine + b * cosine;
}

TERN_CUDA_NAMESPACE_END
