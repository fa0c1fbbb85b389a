#include "kernels/cpu/attention.h"

#include <cmath>

#include "kernels/cpu/attention_tiles.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/half.h"

namespace tern::kernels {
namespace {

template <KvType type>
struct ScalarOps {
  using Element = std::conditional_t<type == KvType::f32, float, std::uint16_t>;

  static float load(const Element* p, int i) {
    if constexpr (type == KvType::f32) return p[i];
    if constexpr (type == KvType::f16) return f16_to_f32(p[i]);
    if constexpr (type == KvType::bf16) return bf16_to_f32(p[i]);
  }

  static float dot(const float* q, const Element* key, int head_dim) {
    float sum = 0;
    for (int i = 0; i < head_dim; ++i) sum += q[i] * load(key, i);
    return sum;
  }

  static float exp_and_sum(float* scores, int count, float maximum) {
    float sum = 0;
    for (int t = 0; t < count; ++t) {
      scores[t] = expf(scores[t] - maximum);
      sum += scores[t];
    }
    return sum;
  }

  static void accumulate(float* accumulator, const float* weights, const Element* values, int count,
                         int stride, int value_dim) {
    for (int t = 0; t < count; ++t) {
      const Element* value = values + static_cast<std::int64_t>(t) * stride;
      for (int i = 0; i < value_dim; ++i) accumulator[i] += weights[t] * load(value, i);
    }
  }
};

using AttentionFunction = void (*)(const float*, std::int64_t, int, int, int, int,
                                   const std::int32_t*, const KvCacheLayout&, const void*,
                                   const void*, int, float, float*, std::int64_t,
                                   AttentionScratch&);

AttentionFunction select_attention() {
  const CpuFeatures& features = cpu_features();
  if (features.has_avx512()) return paged_attention_avx512;
  if (features.avx2 && features.fma && features.f16c) return paged_attention_avx2;
  return paged_attention_scalar;
}

}  // namespace

AttentionScratch::AttentionScratch(int max_context, int head_dim)
    : max_context_(max_context),
      head_dim_(head_dim),
      scores_(static_cast<std::size_t>(kAttentionHeadsPerPass) * kAttentionKeyTile),
      accumulators_(static_cast<std::size_t>(kAttentionHeadsPerPass) *
                    static_cast<std::size_t>(head_dim)),
      staging_(static_cast<std::size_t>(kAttentionStagedRows) *
               static_cast<std::size_t>((head_dim + 15) / 16 * 16)) {}

void paged_attention(const float* q, std::int64_t q_stride, int q_len, int first_position,
                     int n_heads, int kv_head, const std::int32_t* block_table,
                     const KvCacheLayout& layout, const void* k_pool, const void* v_pool,
                     int value_dim, float scale, float* out, std::int64_t out_stride,
                     AttentionScratch& scratch) {
  static const AttentionFunction function = select_attention();
  function(q, q_stride, q_len, first_position, n_heads, kv_head, block_table, layout, k_pool,
           v_pool, value_dim, scale, out, out_stride, scratch);
}

void paged_attention_scalar(const float* q, std::int64_t q_stride, int q_len, int first_position,
                            int n_heads, int kv_head, const std::int32_t* block_table,
                            const KvCacheLayout& layout, const void* k_pool, const void* v_pool,
                            int value_dim, float scale, float* out, std::int64_t out_stride,
                            AttentionScratch& scratch) {
  attention_tiles::run_for_kv_type<ScalarOps>(q, q_stride, q_len, first_position, n_heads, kv_head,
                                              block_table, layout, k_pool, v_pool, value_dim, scale,
                                              out, out_stride, scratch);
}

}  // namespace tern::kernels
