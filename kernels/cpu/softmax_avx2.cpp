#include <immintrin.h>

#include "kernels/cpu/simd_math_avx2.h"
#include "kernels/cpu/softmax.h"

namespace tern::kernels {

void softmax_avx2(float* x, std::int64_t n) {
  using namespace avx2;
  const __m256 negative_infinity = _mm256_set1_ps(-__builtin_inff());
  __m256 maximum = negative_infinity;
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) maximum = _mm256_max_ps(maximum, _mm256_loadu_ps(x + i));
  const __m256i tail = tail_mask(n - i);
  if (i < n) {
    const __m256 rest = _mm256_blendv_ps(negative_infinity, _mm256_maskload_ps(x + i, tail),
                                         _mm256_castsi256_ps(tail));
    maximum = _mm256_max_ps(maximum, rest);
  }
  __m128 folded = _mm_max_ps(_mm256_castps256_ps128(maximum), _mm256_extractf128_ps(maximum, 1));
  folded = _mm_max_ps(folded, _mm_movehl_ps(folded, folded));
  folded = _mm_max_ss(folded, _mm_movehdup_ps(folded));
  const __m256 shift = _mm256_set1_ps(_mm_cvtss_f32(folded));

  __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
  for (i = 0; i + 16 <= n; i += 16) {
    const __m256 a = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), shift));
    const __m256 b = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), shift));
    _mm256_storeu_ps(x + i, a);
    _mm256_storeu_ps(x + i + 8, b);
    sum0 = _mm256_add_ps(sum0, a);
    sum1 = _mm256_add_ps(sum1, b);
  }
  for (; i < n; i += 8) {
    const __m256i mask = tail_mask(n - i);
    const __m256 a = exp_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, mask), shift));
    _mm256_maskstore_ps(x + i, mask, a);
    sum0 = _mm256_add_ps(sum0, _mm256_and_ps(a, _mm256_castsi256_ps(mask)));
  }
  const __m256 inverse_sum = _mm256_set1_ps(1.0f / reduce_add(_mm256_add_ps(sum0, sum1)));
  for (i = 0; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inverse_sum));
  }
  if (i < n) {
    _mm256_maskstore_ps(x + i, tail, _mm256_mul_ps(_mm256_maskload_ps(x + i, tail), inverse_sum));
  }
}

}  // namespace tern::kernels
