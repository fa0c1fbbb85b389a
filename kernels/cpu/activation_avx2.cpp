#include <immintrin.h>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/simd_math_avx2.h"

namespace tern::kernels {
namespace {

inline __m256 silu_mul_vector(__m256 gate, __m256 up) {
  const __m256 sigmoid_denominator =
      _mm256_add_ps(_mm256_set1_ps(1.0f), avx2::exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), gate)));
  return _mm256_mul_ps(_mm256_div_ps(gate, sigmoid_denominator), up);
}

}  // namespace

void silu_mul_avx2(const float* gate, const float* up, float* out, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, silu_mul_vector(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    // The tail goes through the same vector arithmetic, so an element's value never depends on
    // whether it falls in the tail.
    const __m256i mask = avx2::tail_mask(n - i);
    const __m256 result =
        silu_mul_vector(_mm256_maskload_ps(gate + i, mask), _mm256_maskload_ps(up + i, mask));
    _mm256_maskstore_ps(out + i, mask, result);
  }
}

}  // namespace tern::kernels
