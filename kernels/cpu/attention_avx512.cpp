// GCC 12 flags the deliberately undefined pass-through operand of its own AVX-512 intrinsics
// (_mm512_undefined_ps) once they are inlined here; the warning is a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <type_traits>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_tiles.h"
#include "kernels/cpu/simd_math_avx512.h"

namespace tern::kernels {
namespace {

template <KvType type>
struct Avx512Ops {
  using Element = std::conditional_t<type == KvType::f32, float, std::uint16_t>;

  static __m512 load(const Element* p) {
    if constexpr (type == KvType::f32) return avx512::load_f32(p);
    if constexpr (type == KvType::f16) return avx512::load_f16(p);
    if constexpr (type == KvType::bf16) return avx512::load_bf16(p);
  }
  static __m512 load(const Element* p, __mmask16 mask) {
    if constexpr (type == KvType::f32) return avx512::load_f32(p, mask);
    if constexpr (type == KvType::f16) return avx512::load_f16(p, mask);
    if constexpr (type == KvType::bf16) return avx512::load_bf16(p, mask);
  }

  static float dot(const float* q, const Element* key, int head_dim) {
    __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
    __m512 sum2 = _mm512_setzero_ps(), sum3 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 64 <= head_dim; i += 64) {
      sum0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), load(key + i), sum0);
      sum1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), load(key + i + 16), sum1);
      sum2 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 32), load(key + i + 32), sum2);
      sum3 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 48), load(key + i + 48), sum3);
    }
    for (; i < head_dim; i += 16) {
      const __mmask16 mask = avx512::tail_mask(head_dim - i < 16 ? head_dim - i : 16);
      sum0 = _mm512_fmadd_ps(avx512::load_f32(q + i, mask), load(key + i, mask), sum0);
    }
    return avx512::reduce_add(_mm512_add_ps(_mm512_add_ps(sum0, sum1), _mm512_add_ps(sum2, sum3)));
  }

  static float exp_and_sum(float* scores, int count, float maximum) {
    const __m512 shift = _mm512_set1_ps(maximum);
    __m512 sum = _mm512_setzero_ps();
    for (int t = 0; t < count; t += 16) {
      const __mmask16 mask = avx512::tail_mask(count - t < 16 ? count - t : 16);
      const __m512 p =
          avx512::exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, scores + t), shift));
      _mm512_mask_storeu_ps(scores + t, mask, p);
      sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(mask, p));
    }
    return avx512::reduce_add(sum);
  }

  static void accumulate(float* accumulator, const float* weights, const Element* values, int count,
                         int stride, int value_dim) {
    int i = 0;
    // Four independent FMA chains per pass over the keys.
    for (; i + 64 <= value_dim; i += 64) {
      __m512 a0 = _mm512_loadu_ps(accumulator + i), a1 = _mm512_loadu_ps(accumulator + i + 16);
      __m512 a2 = _mm512_loadu_ps(accumulator + i + 32), a3 = _mm512_loadu_ps(accumulator + i + 48);
      for (int t = 0; t < count; ++t) {
        const __m512 w = _mm512_set1_ps(weights[t]);
        const Element* value = values + static_cast<std::int64_t>(t) * stride + i;
        a0 = _mm512_fmadd_ps(w, load(value), a0);
        a1 = _mm512_fmadd_ps(w, load(value + 16), a1);
        a2 = _mm512_fmadd_ps(w, load(value + 32), a2);
        a3 = _mm512_fmadd_ps(w, load(value + 48), a3);
      }
      _mm512_storeu_ps(accumulator + i, a0);
      _mm512_storeu_ps(accumulator + i + 16, a1);
      _mm512_storeu_ps(accumulator + i + 32, a2);
      _mm512_storeu_ps(accumulator + i + 48, a3);
    }
    for (; i < value_dim; i += 16) {
      const __mmask16 mask = avx512::tail_mask(value_dim - i < 16 ? value_dim - i : 16);
      __m512 a = avx512::load_f32(accumulator + i, mask);
      for (int t = 0; t < count; ++t) {
        const Element* value = values + static_cast<std::int64_t>(t) * stride + i;
        a = _mm512_fmadd_ps(_mm512_set1_ps(weights[t]), load(value, mask), a);
      }
      _mm512_mask_storeu_ps(accumulator + i, mask, a);
    }
  }
};

}  // namespace

void paged_attention_avx512(const float* q, std::int64_t q_stride, int q_len, int first_position,
                            int n_heads, int kv_head, const std::int32_t* block_table,
                            const KvCacheLayout& layout, const void* k_pool, const void* v_pool,
                            int value_dim, float scale, float* out, std::int64_t out_stride,
                            AttentionScratch& scratch) {
  switch (layout.type) {
    case KvType::f32:
      return attention_tiles::run<Avx512Ops<KvType::f32>>(
          q, q_stride, q_len, first_position, n_heads, kv_head, block_table, layout, k_pool, v_pool,
          value_dim, scale, out, out_stride, scratch);
    case KvType::f16:
      return attention_tiles::run<Avx512Ops<KvType::f16>>(
          q, q_stride, q_len, first_position, n_heads, kv_head, block_table, layout, k_pool, v_pool,
          value_dim, scale, out, out_stride, scratch);
    case KvType::bf16:
      return attention_tiles::run<Avx512Ops<KvType::bf16>>(
          q, q_stride, q_len, first_position, n_heads, kv_head, block_table, layout, k_pool, v_pool,
          value_dim, scale, out, out_stride, scratch);
  }
}

}  // namespace tern::kernels
