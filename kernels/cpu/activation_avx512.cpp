// GCC 12 flags the deliberately undefined pass-through operand of its own AVX-512 intrinsics
// (_mm512_undefined_ps) once they are inlined here; the warning is a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/simd_math_avx512.h"

namespace tern::kernels {
namespace {

inline __m512 silu_mul_vector(__m512 gate, __m512 up) {
  const __m512 sigmoid_denominator =
      _mm512_add_ps(_mm512_set1_ps(1.0f), avx512::exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), gate)));
  return _mm512_mul_ps(_mm512_div_ps(gate, sigmoid_denominator), up);
}

}  // namespace

void silu_mul_avx512(const float* gate, const float* up, float* out, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, silu_mul_vector(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
  }
  if (i < n) {
    // The tail goes through the same vector arithmetic, so an element's value never depends on
    // whether it falls in the tail.
    const __mmask16 mask = avx512::tail_mask(n - i);
    const __m512 result =
        silu_mul_vector(avx512::load_f32(gate + i, mask), avx512::load_f32(up + i, mask));
    _mm512_mask_storeu_ps(out + i, mask, result);
  }
}

}  // namespace tern::kernels
