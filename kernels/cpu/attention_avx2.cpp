#include <immintrin.h>

#include <type_traits>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_tiles.h"
#include "kernels/cpu/simd_math_avx2.h"

namespace tern::kernels {
namespace {

template <KvType type>
struct Avx2Ops {
  using Element = std::conditional_t<type == KvType::f32, float, std::uint16_t>;

  static __m256 load(const Element* p) {
    if constexpr (type == KvType::f32) return avx2::load_f32(p);
    if constexpr (type == KvType::f16) return avx2::load_f16(p);
    if constexpr (type == KvType::bf16) return avx2::load_bf16(p);
  }
  // One element, for dimension tails.
  static float load_one(const Element* p) {
    if constexpr (type == KvType::f32) return avx2::load_f32(p, 0);
    if constexpr (type == KvType::f16) return avx2::load_f16(p, 0);
    if constexpr (type == KvType::bf16) return avx2::load_bf16(p, 0);
  }

  static float dot(const float* q, const Element* key, int head_dim) {
    __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
    __m256 sum2 = _mm256_setzero_ps(), sum3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= head_dim; i += 32) {
      sum0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load(key + i), sum0);
      sum1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load(key + i + 8), sum1);
      sum2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 16), load(key + i + 16), sum2);
      sum3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 24), load(key + i + 24), sum3);
    }
    for (; i + 8 <= head_dim; i += 8) {
      sum0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load(key + i), sum0);
    }
    float sum =
        avx2::reduce_add(_mm256_add_ps(_mm256_add_ps(sum0, sum1), _mm256_add_ps(sum2, sum3)));
    for (; i < head_dim; ++i) sum += q[i] * load_one(key + i);
    return sum;
  }

  static float exp_and_sum(float* scores, int count, float maximum) {
    const __m256 shift = _mm256_set1_ps(maximum);
    __m256 sum = _mm256_setzero_ps();
    for (int t = 0; t < count; t += 8) {
      const __m256i mask = avx2::tail_mask(count - t);
      const __m256 p = avx2::exp_ps(_mm256_sub_ps(_mm256_maskload_ps(scores + t, mask), shift));
      _mm256_maskstore_ps(scores + t, mask, p);
      sum = _mm256_add_ps(sum, _mm256_and_ps(p, _mm256_castsi256_ps(mask)));
    }
    return avx2::reduce_add(sum);
  }

  static void accumulate(float* accumulator, const float* weights, const Element* values, int count,
                         int stride, int value_dim) {
    int i = 0;
    // Four independent FMA chains per pass over the keys.
    for (; i + 32 <= value_dim; i += 32) {
      __m256 a0 = _mm256_loadu_ps(accumulator + i), a1 = _mm256_loadu_ps(accumulator + i + 8);
      __m256 a2 = _mm256_loadu_ps(accumulator + i + 16), a3 = _mm256_loadu_ps(accumulator + i + 24);
      for (int t = 0; t < count; ++t) {
        const __m256 w = _mm256_set1_ps(weights[t]);
        const Element* value = values + static_cast<std::int64_t>(t) * stride + i;
        a0 = _mm256_fmadd_ps(w, load(value), a0);
        a1 = _mm256_fmadd_ps(w, load(value + 8), a1);
        a2 = _mm256_fmadd_ps(w, load(value + 16), a2);
        a3 = _mm256_fmadd_ps(w, load(value + 24), a3);
      }
      _mm256_storeu_ps(accumulator + i, a0);
      _mm256_storeu_ps(accumulator + i + 8, a1);
      _mm256_storeu_ps(accumulator + i + 16, a2);
      _mm256_storeu_ps(accumulator + i + 24, a3);
    }
    for (; i + 8 <= value_dim; i += 8) {
      __m256 a = _mm256_loadu_ps(accumulator + i);
      for (int t = 0; t < count; ++t) {
        const Element* value = values + static_cast<std::int64_t>(t) * stride + i;
        a = _mm256_fmadd_ps(_mm256_set1_ps(weights[t]), load(value), a);
      }
      _mm256_storeu_ps(accumulator + i, a);
    }
    for (; i < value_dim; ++i) {
      float a = accumulator[i];
      for (int t = 0; t < count; ++t) {
        a += weights[t] * load_one(values + static_cast<std::int64_t>(t) * stride + i);
      }
      accumulator[i] = a;
    }
  }
};

}  // namespace

void paged_attention_avx2(const float* q, std::int64_t q_stride, int q_len, int first_position,
                          int n_heads, int kv_head, const std::int32_t* block_table,
                          const KvCacheLayout& layout, const void* k_pool, const void* v_pool,
                          int value_dim, float scale, float* out, std::int64_t out_stride,
                          AttentionScratch& scratch) {
  attention_tiles::run_for_kv_type<Avx2Ops>(q, q_stride, q_len, first_position, n_heads, kv_head,
                                            block_table, layout, k_pool, v_pool, value_dim, scale,
                                            out, out_stride, scratch);
}

}  // namespace tern::kernels
