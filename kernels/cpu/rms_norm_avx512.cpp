// GCC 12 flags the deliberately undefined pass-through operand of its own AVX-512 intrinsics
// (_mm512_undefined_ps) once they are inlined here; the warning is a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/simd_math_avx512.h"

namespace tern::kernels {

void rms_norm_avx512(const float* x, const float* weight, float* y, std::int64_t rows,
                     std::int64_t cols, float eps) {
  using namespace avx512;
  for (std::int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * cols;
    float* out = y + row * cols;
    // Four accumulators hide FMA latency and shorten the float rounding chains.
    __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
    __m512 sum2 = _mm512_setzero_ps(), sum3 = _mm512_setzero_ps();
    std::int64_t i = 0;
    for (; i + 64 <= cols; i += 64) {
      const __m512 a = _mm512_loadu_ps(in + i), b = _mm512_loadu_ps(in + i + 16);
      const __m512 c = _mm512_loadu_ps(in + i + 32), d = _mm512_loadu_ps(in + i + 48);
      sum0 = _mm512_fmadd_ps(a, a, sum0);
      sum1 = _mm512_fmadd_ps(b, b, sum1);
      sum2 = _mm512_fmadd_ps(c, c, sum2);
      sum3 = _mm512_fmadd_ps(d, d, sum3);
    }
    for (; i < cols; i += 16) {
      const __m512 a = load_f32(in + i, tail_mask(cols - i < 16 ? cols - i : 16));
      sum0 = _mm512_fmadd_ps(a, a, sum0);
    }
    const float sum_of_squares =
        reduce_add(_mm512_add_ps(_mm512_add_ps(sum0, sum1), _mm512_add_ps(sum2, sum3)));
    const __m512 scale =
        _mm512_set1_ps(1.0f / sqrtf(sum_of_squares / static_cast<float>(cols) + eps));
    for (i = 0; i + 16 <= cols; i += 16) {
      const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(in + i), scale);
      _mm512_storeu_ps(out + i, _mm512_mul_ps(v, _mm512_loadu_ps(weight + i)));
    }
    if (i < cols) {
      const __mmask16 mask = tail_mask(cols - i);
      const __m512 v = _mm512_mul_ps(load_f32(in + i, mask), scale);
      _mm512_mask_storeu_ps(out + i, mask, _mm512_mul_ps(v, load_f32(weight + i, mask)));
    }
  }
}

}  // namespace tern::kernels
