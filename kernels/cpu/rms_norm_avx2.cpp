#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/simd_math_avx2.h"

namespace tern::kernels {

void rms_norm_avx2(const float* x, const float* weight, float* y, std::int64_t rows,
                   std::int64_t cols, float eps) {
  using namespace avx2;
  for (std::int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * cols;
    float* out = y + row * cols;
    // Four accumulators hide FMA latency and shorten the float rounding chains.
    __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
    __m256 sum2 = _mm256_setzero_ps(), sum3 = _mm256_setzero_ps();
    std::int64_t i = 0;
    for (; i + 32 <= cols; i += 32) {
      const __m256 a = _mm256_loadu_ps(in + i), b = _mm256_loadu_ps(in + i + 8);
      const __m256 c = _mm256_loadu_ps(in + i + 16), d = _mm256_loadu_ps(in + i + 24);
      sum0 = _mm256_fmadd_ps(a, a, sum0);
      sum1 = _mm256_fmadd_ps(b, b, sum1);
      sum2 = _mm256_fmadd_ps(c, c, sum2);
      sum3 = _mm256_fmadd_ps(d, d, sum3);
    }
    for (; i < cols; i += 8) {
      const __m256 a = _mm256_maskload_ps(in + i, tail_mask(cols - i));
      sum0 = _mm256_fmadd_ps(a, a, sum0);
    }
    const float sum_of_squares =
        reduce_add(_mm256_add_ps(_mm256_add_ps(sum0, sum1), _mm256_add_ps(sum2, sum3)));
    const __m256 scale =
        _mm256_set1_ps(1.0f / sqrtf(sum_of_squares / static_cast<float>(cols) + eps));
    for (i = 0; i + 8 <= cols; i += 8) {
      const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(in + i), scale);
      _mm256_storeu_ps(out + i, _mm256_mul_ps(v, _mm256_loadu_ps(weight + i)));
    }
    if (i < cols) {
      const __m256i mask = tail_mask(cols - i);
      const __m256 v = _mm256_mul_ps(_mm256_maskload_ps(in + i, mask), scale);
      _mm256_maskstore_ps(out + i, mask, _mm256_mul_ps(v, _mm256_maskload_ps(weight + i, mask)));
    }
  }
}

}  // namespace tern::kernels
