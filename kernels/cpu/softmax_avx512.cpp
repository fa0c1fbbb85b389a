// GCC 12 flags the deliberately undefined pass-through operand of its own AVX-512 intrinsics
// (_mm512_undefined_ps) once they are inlined here; the warning is a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include "kernels/cpu/simd_math_avx512.h"
#include "kernels/cpu/softmax.h"

namespace tern::kernels {

void softmax_avx512(float* x, std::int64_t n) {
  using namespace avx512;
  const __m512 negative_infinity = _mm512_set1_ps(-__builtin_inff());
  __m512 maximum = negative_infinity;
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) maximum = _mm512_max_ps(maximum, _mm512_loadu_ps(x + i));
  const __mmask16 tail = tail_mask(n - i);
  if (i < n) maximum = _mm512_max_ps(maximum, _mm512_mask_loadu_ps(negative_infinity, tail, x + i));
  const __m512 shift = _mm512_set1_ps(_mm512_reduce_max_ps(maximum));

  __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
  for (i = 0; i + 32 <= n; i += 32) {
    const __m512 a = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), shift));
    const __m512 b = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), shift));
    _mm512_storeu_ps(x + i, a);
    _mm512_storeu_ps(x + i + 16, b);
    sum0 = _mm512_add_ps(sum0, a);
    sum1 = _mm512_add_ps(sum1, b);
  }
  for (; i < n; i += 16) {
    const __mmask16 mask = tail_mask(n - i < 16 ? n - i : 16);
    const __m512 a = exp_ps(_mm512_sub_ps(load_f32(x + i, mask), shift));
    _mm512_mask_storeu_ps(x + i, mask, a);
    sum0 = _mm512_add_ps(sum0, _mm512_maskz_mov_ps(mask, a));
  }
  const __m512 inverse_sum = _mm512_set1_ps(1.0f / reduce_add(_mm512_add_ps(sum0, sum1)));
  for (i = 0; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), inverse_sum));
  }
  if (i < n) _mm512_mask_storeu_ps(x + i, tail, _mm512_mul_ps(load_f32(x + i, tail), inverse_sum));
}

}  // namespace tern::kernels
