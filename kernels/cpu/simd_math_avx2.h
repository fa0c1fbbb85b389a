#pragma once

// Vector helpers shared by the AVX2 kernel variants. Include only from *_avx2.cpp files. The
// functions are static so every translation unit keeps its own copy: an out-of-line copy with AVX2
// instructions must never be picked by the linker for baseline code.

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "simd_math_avx2.h needs AVX2, FMA and F16C (include it from *_avx2.cpp only)"
#endif

#include <immintrin.h>

#include <cstdint>

namespace tern::kernels::avx2 {

// e^x per lane; the same algorithm and constants as avx512::exp_ps (about 2 ulp, 0 below
// ln(FLT_MIN), infinity above ln(FLT_MAX), NaN stays NaN).
static inline __m256 exp_ps(__m256 x) {
  const __m256 lowest = _mm256_set1_ps(-87.33654f);
  const __m256 highest = _mm256_set1_ps(88.72283f);
  // max/min return the second operand when one is NaN, so NaN passes through the clamps.
  __m256 clamped = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(lowest, x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(clamped, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), clamped);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i exponent =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 result = _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
  result = _mm256_blendv_ps(result, _mm256_setzero_ps(), _mm256_cmp_ps(x, lowest, _CMP_LT_OQ));
  return _mm256_blendv_ps(result, _mm256_set1_ps(__builtin_inff()),
                          _mm256_cmp_ps(x, highest, _CMP_GT_OQ));
}

// Eight stored values as f32.
static inline __m256 load_f32(const float* p) {
  return _mm256_loadu_ps(p);
}
static inline __m256 load_f16(const std::uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
static inline __m256 load_bf16(const std::uint16_t* p) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}

// Scalar forms for loop tails, in the same rounding as the vector forms.
static inline float load_f32(const float* p, int) {
  return *p;
}
static inline float load_f16(const std::uint16_t* p, int) {
  return _cvtsh_ss(*p);
}
static inline float load_bf16(const std::uint16_t* p, int) {
  return __builtin_bit_cast(float, static_cast<std::uint32_t>(*p) << 16);
}

// Horizontal sum in a fixed tree order (the same for every call).
static inline float reduce_add(__m256 v) {
  __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  quarter = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  quarter = _mm_add_ss(quarter, _mm_movehdup_ps(quarter));
  return _mm_cvtss_f32(quarter);
}

// Lanes [0, count) all-ones, the rest zero: a mask for _mm256_maskload_ps/_mm256_maskstore_ps.
static inline __m256i tail_mask(std::int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace tern::kernels::avx2
