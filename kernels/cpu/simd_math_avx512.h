#pragma once

// Vector helpers shared by the AVX-512 kernel variants. Include only from *_avx512.cpp files. The
// functions are static so every translation unit keeps its own copy: an out-of-line copy with
// AVX-512 instructions must never be picked by the linker for baseline code.

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__)
#error "simd_math_avx512.h needs AVX-512 F/BW/VL (include it from *_avx512.cpp only)"
#endif

#include <immintrin.h>

#include <cstdint>

namespace tern::kernels::avx512 {

// e^x per lane, Cephes-style: x = n ln2 + r, e^r by a degree-6 polynomial, 2^n through the
// exponent bits. About 2 ulp. Below ln(FLT_MIN) it returns 0 (no subnormals), above ln(FLT_MAX)
// infinity, and NaN stays NaN. Every lane is computed alike, so a value's result does not depend
// on which lane or which call it lands in.
static inline __m512 exp_ps(__m512 x) {
  const __m512 lowest = _mm512_set1_ps(-87.33654f);
  const __m512 highest = _mm512_set1_ps(88.72283f);
  // max/min return the second operand when one is NaN, so NaN passes through the clamps.
  __m512 clamped = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(lowest, x));
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(clamped, _mm512_set1_ps(1.44269504088896341f)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), clamped);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i exponent =
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  __m512 result = _mm512_mul_ps(p, _mm512_castsi512_ps(exponent));
  result =
      _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(x, lowest, _CMP_LT_OQ), _mm512_setzero_ps());
  return _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(x, highest, _CMP_GT_OQ),
                            _mm512_set1_ps(__builtin_inff()));
}

// The low `count` lanes (count <= 16), for loop tails.
static inline __mmask16 tail_mask(std::int64_t count) {
  return static_cast<__mmask16>((1u << count) - 1u);
}

// Sixteen stored values as f32; the masked forms read only the selected lanes (zero elsewhere).
static inline __m512 load_f32(const float* p) {
  return _mm512_loadu_ps(p);
}
static inline __m512 load_f32(const float* p, __mmask16 mask) {
  return _mm512_maskz_loadu_ps(mask, p);
}
static inline __m512 load_f16(const std::uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
static inline __m512 load_f16(const std::uint16_t* p, __mmask16 mask) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
}
static inline __m512 load_bf16(const std::uint16_t* p) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
}
static inline __m512 load_bf16(const std::uint16_t* p, __mmask16 mask) {
  const __m256i raw = _mm256_maskz_loadu_epi16(mask, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
}

// Horizontal sum in a fixed tree order (the same for every call).
static inline float reduce_add(__m512 v) {
  const __m256 half = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
  quarter = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  quarter = _mm_add_ss(quarter, _mm_movehdup_ps(quarter));
  return _mm_cvtss_f32(quarter);
}

}  // namespace tern::kernels::avx512
