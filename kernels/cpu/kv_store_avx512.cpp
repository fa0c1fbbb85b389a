// The AVX-512 conversion of K/V rows to f16, for store_kv.

// GCC 12 reports the _mm512_undefined_*() placeholders inside its own AVX-512 intrinsics as
// maybe-uninitialized; the warning is a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/half.h"
#include "kernels/cpu/kv_store.h"

namespace tern::kernels {

void f32_to_f16_row_avx512(const float* source, std::int64_t count, std::uint16_t* out) {
  const __m512i quiet_nan = _mm512_set1_epi32(0x7e00);
  const __m512i sign = _mm512_set1_epi32(0x8000);
  std::int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m512 values = _mm512_loadu_ps(source + i);
    __m256i halves = _mm512_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // The hardware keeps part of a NaN's payload; f32_to_f16 (and so the scalar path and the
    // CUDA kernels' reference) gives every NaN as sign | 0x7e00.
    const __mmask16 nan = _mm512_cmp_ps_mask(values, values, _CMP_UNORD_Q);
    if (nan != 0) {
      const __m512i signs =
          _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(values), 16), sign);
      halves = _mm256_mask_blend_epi16(nan, halves,
                                       _mm512_cvtepi32_epi16(_mm512_or_si512(signs, quiet_nan)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), halves);
  }
  for (; i < count; ++i) out[i] = f32_to_f16(source[i]);
}

}  // namespace tern::kernels
