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

// Sixteen vectors to one: lane t of the result is the sum of vector t's lanes, added in the same
// tree (lanes i and i + 8, then + 4, + 2, + 1) for every t, so a key's score does not depend on
// which of the sixteen places it takes.
inline __m512 sum_each_of_16(const __m512 v[16]) {
  __m512 halves[8], quarters[4], eighths[2];
  for (int j = 0; j < 8; ++j) {
    halves[j] =
        _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                      _mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // quarters[j]: 128-bit lane k holds vector 4j + k's four partial sums.
  for (int j = 0; j < 4; ++j) {
    quarters[j] = _mm512_add_ps(
        _mm512_shuffle_f32x4(halves[2 * j], halves[2 * j + 1], _MM_SHUFFLE(2, 0, 2, 0)),
        _mm512_shuffle_f32x4(halves[2 * j], halves[2 * j + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  for (int j = 0; j < 2; ++j) {
    eighths[j] = _mm512_add_ps(
        _mm512_shuffle_ps(quarters[2 * j], quarters[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
        _mm512_shuffle_ps(quarters[2 * j], quarters[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // Lane 4k + m now holds vector 4m + k's sum.
  const __m512 sums =
      _mm512_add_ps(_mm512_shuffle_ps(eighths[0], eighths[1], _MM_SHUFFLE(2, 0, 2, 0)),
                    _mm512_shuffle_ps(eighths[0], eighths[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, sums);
}

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

  // Rows [0, count) of K or V (`width` elements, `stride` apart) as f32 in `staging`, laid out
  // [width / 16 chunks][kAttentionStagedRows rows][16], so a chunk of every row sits at a fixed
  // offset from one pointer; lanes past `width` are zero.
  static void stage(const Element* rows, int count, int stride, int width, float* staging) {
    for (int t = 0; t < count; ++t) {
      const Element* row = rows + static_cast<std::int64_t>(t) * stride;
      float* chunk = staging + t * 16;
      int i = 0;
      for (; i + 16 <= width; i += 16, chunk += kAttentionStagedRows * 16) {
        _mm512_storeu_ps(chunk, load(row + i));
      }
      if (i < width) _mm512_storeu_ps(chunk, load(row + i, avx512::tail_mask(width - i)));
    }
  }

  // Sixteen keys at a time: one multiply-add chain per key over the head's dimensions, then the
  // sixteen chains summed together. Rows past `count` in the staging area are stale and their
  // lanes are not stored.
  static void score_keys(const float* queries, int heads, int head_dim, const Element* keys,
                         int count, float scale, float* scores, float* staging) {
    const __m512 scale_vector = _mm512_set1_ps(scale);
    const int chunks = (head_dim + 15) / 16;
    for (int first = 0; first < count; first += kAttentionStagedRows) {
      const int n = count - first < kAttentionStagedRows ? count - first : kAttentionStagedRows;
      stage(keys + static_cast<std::int64_t>(first) * head_dim, n, head_dim, head_dim, staging);
      for (int h = 0; h < heads; ++h) {
        const float* query = queries + static_cast<std::int64_t>(h) * head_dim;
        __m512 partial[kAttentionStagedRows];
        for (int t = 0; t < kAttentionStagedRows; ++t) partial[t] = _mm512_setzero_ps();
        for (int c = 0; c < chunks; ++c) {
          const int left = head_dim - 16 * c;
          const __m512 q = left >= 16
                               ? _mm512_loadu_ps(query + 16 * c)
                               : _mm512_maskz_loadu_ps(avx512::tail_mask(left), query + 16 * c);
          const float* chunk = staging + c * kAttentionStagedRows * 16;
          for (int t = 0; t < kAttentionStagedRows; ++t) {
            partial[t] = _mm512_fmadd_ps(q, _mm512_loadu_ps(chunk + 16 * t), partial[t]);
          }
        }
        _mm512_mask_storeu_ps(scores + h * kAttentionKeyTile + first, avx512::tail_mask(n),
                              _mm512_mul_ps(sum_each_of_16(partial), scale_vector));
      }
    }
  }

  // Each value row is converted once for all heads; every accumulator lane adds its keys in
  // key order.
  static void accumulate_values(float* accumulators, int heads, int value_dim, const float* weights,
                                const Element* values, int count, int stride, float* staging) {
    constexpr int kChunkStride = kAttentionStagedRows * 16;
    for (int first = 0; first < count; first += kAttentionStagedRows) {
      const int n = count - first < kAttentionStagedRows ? count - first : kAttentionStagedRows;
      stage(values + static_cast<std::int64_t>(first) * stride, n, stride, value_dim, staging);
      int i = 0;
      for (; i + 64 <= value_dim; i += 64) {
        const float* chunks = staging + (i / 16) * kChunkStride;
        for (int h = 0; h < heads; ++h) {
          float* accumulator = accumulators + h * value_dim + i;
          const float* head_weights = weights + h * kAttentionKeyTile + first;
          __m512 a0 = _mm512_loadu_ps(accumulator), a1 = _mm512_loadu_ps(accumulator + 16);
          __m512 a2 = _mm512_loadu_ps(accumulator + 32), a3 = _mm512_loadu_ps(accumulator + 48);
          for (int t = 0; t < n; ++t) {
            const __m512 w = _mm512_set1_ps(head_weights[t]);
            const float* row = chunks + 16 * t;
            a0 = _mm512_fmadd_ps(w, _mm512_loadu_ps(row), a0);
            a1 = _mm512_fmadd_ps(w, _mm512_loadu_ps(row + kChunkStride), a1);
            a2 = _mm512_fmadd_ps(w, _mm512_loadu_ps(row + 2 * kChunkStride), a2);
            a3 = _mm512_fmadd_ps(w, _mm512_loadu_ps(row + 3 * kChunkStride), a3);
          }
          _mm512_storeu_ps(accumulator, a0);
          _mm512_storeu_ps(accumulator + 16, a1);
          _mm512_storeu_ps(accumulator + 32, a2);
          _mm512_storeu_ps(accumulator + 48, a3);
        }
      }
      for (; i < value_dim; i += 16) {
        const __mmask16 mask = avx512::tail_mask(value_dim - i < 16 ? value_dim - i : 16);
        const float* chunk = staging + (i / 16) * kChunkStride;
        for (int h = 0; h < heads; ++h) {
          float* accumulator = accumulators + h * value_dim + i;
          const float* head_weights = weights + h * kAttentionKeyTile + first;
          __m512 a = _mm512_maskz_loadu_ps(mask, accumulator);
          for (int t = 0; t < n; ++t) {
            a = _mm512_fmadd_ps(_mm512_set1_ps(head_weights[t]), _mm512_loadu_ps(chunk + 16 * t),
                                a);
          }
          _mm512_mask_storeu_ps(accumulator, mask, a);
        }
      }
    }
  }

  static float maximum_of(const float* scores, int count) {
    __m512 maximum = _mm512_set1_ps(-__builtin_inff());
    for (int t = 0; t < count; t += 16) {
      const __mmask16 mask = avx512::tail_mask(count - t < 16 ? count - t : 16);
      maximum = _mm512_mask_max_ps(maximum, mask, maximum, _mm512_maskz_loadu_ps(mask, scores + t));
    }
    return _mm512_reduce_max_ps(maximum);
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
};

}  // namespace

void paged_attention_avx512(const float* q, std::int64_t q_stride, int q_len, int first_position,
                            int n_heads, int kv_head, const std::int32_t* block_table,
                            const KvCacheLayout& layout, const void* k_pool, const void* v_pool,
                            int value_dim, float scale, float* out, std::int64_t out_stride,
                            AttentionScratch& scratch) {
  attention_tiles::run_for_kv_type<Avx512Ops>(q, q_stride, q_len, first_position, n_heads, kv_head,
                                              block_table, layout, k_pool, v_pool, value_dim, scale,
                                              out, out_stride, scratch);
}

}  // namespace tern::kernels
