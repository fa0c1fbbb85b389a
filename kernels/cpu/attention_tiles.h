#pragma once

// The loop structure of paged_attention, shared by its instruction-set variants. Each variant
// supplies the inner operations through an Ops type (declared in an unnamed namespace, so every
// instantiation stays private to its translation unit and no wide-instruction copy is shared with
// baseline code):
//   using Element;                                     // float or std::uint16_t (f16/bf16 bits)
//   static float exp_and_sum(float* scores, int count, float maximum);  // in place: e^(s - max)
// one key and one head at a time:
//   static float dot(const float* q, const Element* key, int head_dim);
//   static void accumulate(float* accumulator, const float* weights, const Element* values,
//                          int count, int stride, int value_dim);
//       // accumulator[0 .. value_dim) += sum_t w[t] * values[t * stride + 0 .. value_dim)
// or, in their place, all heads of a pass at once:
//   static void score_keys(const float* queries, int heads, int head_dim, const Element* keys,
//                          int count, float scale, float* scores, float* staging);
//       // scores[h * kAttentionKeyTile + t] = dot(query h, key t) * scale, t < count
//   static void accumulate_values(float* accumulators, int heads, int value_dim,
//                                 const float* weights, const Element* values, int count,
//                                 int stride, float* staging);
//       // accumulator h += sum_t weights[h * kAttentionKeyTile + t] * value t, in key order
// with `staging` room for kAttentionStagedRows rows of head_dim floats; and optionally
//   static float maximum_of(const float* scores, int count);   // count >= 1
// Each operation must treat a key or a dimension alike wherever it sits, which the tiling below
// relies on for batch invariance.

#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/attention.h"

namespace tern::kernels::attention_tiles {

inline void prefetch_bytes(const void* start, std::size_t bytes) {
  constexpr std::size_t kLine = 64;
  const auto* first = static_cast<const char*>(start);
  for (std::size_t offset = 0; offset < bytes; offset += kLine) __builtin_prefetch(first + offset);
}

template <typename Ops>
float maximum_of(const float* scores, int count) {
  if constexpr (requires { Ops::maximum_of(scores, count); }) {
    return Ops::maximum_of(scores, count);
  } else {
    float maximum = scores[0];
    for (int t = 1; t < count; ++t) maximum = scores[t] > maximum ? scores[t] : maximum;
    return maximum;
  }
}

template <typename Ops>
void score_keys(const float* queries, int heads, int head_dim, const typename Ops::Element* keys,
                int count, float scale, float* scores, AttentionScratch& scratch) {
  if constexpr (requires {
                  Ops::score_keys(queries, heads, head_dim, keys, count, scale, scores,
                                  scratch.staging());
                }) {
    Ops::score_keys(queries, heads, head_dim, keys, count, scale, scores, scratch.staging());
  } else {
    (void)scratch;
    for (int h = 0; h < heads; ++h) {
      const float* query = queries + static_cast<std::int64_t>(h) * head_dim;
      float* head_scores = scores + h * kAttentionKeyTile;
      for (int t = 0; t < count; ++t) {
        head_scores[t] =
            Ops::dot(query, keys + static_cast<std::int64_t>(t) * head_dim, head_dim) * scale;
      }
    }
  }
}

template <typename Ops>
void accumulate_values(float* accumulators, int heads, int value_dim, const float* weights,
                       const typename Ops::Element* values, int count, int stride,
                       AttentionScratch& scratch) {
  if constexpr (requires {
                  Ops::accumulate_values(accumulators, heads, value_dim, weights, values, count,
                                         stride, scratch.staging());
                }) {
    Ops::accumulate_values(accumulators, heads, value_dim, weights, values, count, stride,
                           scratch.staging());
  } else {
    (void)scratch;
    for (int h = 0; h < heads; ++h) {
      Ops::accumulate(accumulators + h * value_dim, weights + h * kAttentionKeyTile, values, count,
                      stride, value_dim);
    }
  }
}

// A tile of key positions walked in runs that are contiguous in one cache block: f(j, run,
// offset) for the run of `run` keys starting at the tile's j-th, whose rows start `offset`
// elements into the pool.
struct KeyRuns {
  const std::int32_t* block_table;
  int block_size;
  std::int64_t block_elements;
  std::int64_t head_offset;
  int head_dim;
  int tile_start;
  int tile_length;

  template <typename F>
  void for_each(F&& f) const {
    for (int j = 0; j < tile_length;) {
      const int position = tile_start + j;
      const int slot = position % block_size;
      const int run = block_size - slot < tile_length - j ? block_size - slot : tile_length - j;
      f(j, run,
        block_table[position / block_size] * block_elements + head_offset +
            static_cast<std::int64_t>(slot) * head_dim);
      j += run;
    }
  }
};

template <typename Ops>
static void run(const float* q, std::int64_t q_stride, int q_len, int first_position, int n_heads,
                int kv_head, const std::int32_t* block_table, const KvCacheLayout& layout,
                const void* k_pool, const void* v_pool, int value_dim, float scale, float* out,
                std::int64_t out_stride, AttentionScratch& scratch) {
  using Element = typename Ops::Element;
  const int head_dim = layout.head_dim;
  const int block_size = layout.block_size;
  const int group = n_heads / layout.n_kv_heads;
  assert(n_heads % layout.n_kv_heads == 0 && kv_head < layout.n_kv_heads);
  assert(head_dim == scratch.head_dim());
  assert(value_dim >= 1 && value_dim <= head_dim);
  assert(first_position + q_len <= scratch.max_context());
  const std::int64_t block_elements =
      static_cast<std::int64_t>(layout.n_kv_heads) * block_size * head_dim;
  const std::int64_t head_offset = static_cast<std::int64_t>(kv_head) * block_size * head_dim;
  const auto* keys_base = static_cast<const Element*>(k_pool);
  const auto* values_base = static_cast<const Element*>(v_pool);
  float* scores = scratch.scores();
  float* accumulators = scratch.accumulators();

  for (int row = 0; row < q_len; ++row) {
    const int key_count = first_position + row + 1;
    for (int first_head = 0; first_head < group; first_head += kAttentionHeadsPerPass) {
      const int heads =
          group - first_head < kAttentionHeadsPerPass ? group - first_head : kAttentionHeadsPerPass;
      const int query_head = kv_head * group + first_head;
      const float* queries = q + row * q_stride + static_cast<std::int64_t>(query_head) * head_dim;
      float running_max[kAttentionHeadsPerPass];
      float running_sum[kAttentionHeadsPerPass];
      for (int h = 0; h < heads; ++h) {
        running_max[h] = -INFINITY;
        running_sum[h] = 0;
      }
      for (int i = 0; i < heads * value_dim; ++i) accumulators[i] = 0;

      for (int tile_start = 0; tile_start < key_count; tile_start += kAttentionKeyTile) {
        const int tile_length =
            key_count - tile_start < kAttentionKeyTile ? key_count - tile_start : kAttentionKeyTile;
        // A decode step finds its keys and values in memory, not cache (the weights stream
        // through in between): ask for the whole tile at once rather than a run at a time.
        const KeyRuns runs{block_table, block_size, block_elements, head_offset,
                           head_dim,    tile_start, tile_length};
        if (row == 0) {
          runs.for_each([&](int /*j*/, int run, std::int64_t offset) {
            prefetch_bytes(keys_base + offset, run * head_dim * sizeof(Element));
            if (values_base != keys_base) {
              prefetch_bytes(values_base + offset, run * head_dim * sizeof(Element));
            }
          });
        }
        runs.for_each([&](int j, int run, std::int64_t offset) {
          score_keys<Ops>(queries, heads, head_dim, keys_base + offset, run, scale, scores + j,
                          scratch);
        });
        // Online softmax: rescale what earlier tiles accumulated to this tile's running maximum.
        for (int h = 0; h < heads; ++h) {
          float* head_scores = scores + h * kAttentionKeyTile;
          const float tile_max = maximum_of<Ops>(head_scores, tile_length);
          const float new_max = tile_max > running_max[h] ? tile_max : running_max[h];
          const float correction =
              running_max[h] == -INFINITY ? 0.0f : expf(running_max[h] - new_max);
          running_sum[h] =
              running_sum[h] * correction + Ops::exp_and_sum(head_scores, tile_length, new_max);
          running_max[h] = new_max;
          if (correction != 1.0f) {
            float* accumulator = accumulators + h * value_dim;
            for (int i = 0; i < value_dim; ++i) accumulator[i] *= correction;
          }
        }
        // Values: rows laid out as keys, of which the first value_dim count.
        runs.for_each([&](int j, int run, std::int64_t offset) {
          accumulate_values<Ops>(accumulators, heads, value_dim, scores + j, values_base + offset,
                                 run, head_dim, scratch);
        });
      }

      float* output = out + row * out_stride + static_cast<std::int64_t>(query_head) * value_dim;
      for (int h = 0; h < heads; ++h) {
        const float inverse_sum = 1.0f / running_sum[h];
        for (int i = 0; i < value_dim; ++i) {
          output[h * value_dim + i] = accumulators[h * value_dim + i] * inverse_sum;
        }
      }
    }
  }
}

// run<Ops<type>> for the element type of the cache: each instruction set's entry point.
template <template <KvType> class Ops>
static void run_for_kv_type(const float* q, std::int64_t q_stride, int q_len, int first_position,
                            int n_heads, int kv_head, const std::int32_t* block_table,
                            const KvCacheLayout& layout, const void* k_pool, const void* v_pool,
                            int value_dim, float scale, float* out, std::int64_t out_stride,
                            AttentionScratch& scratch) {
  switch (layout.type) {
    case KvType::f32:
      return run<Ops<KvType::f32>>(q, q_stride, q_len, first_position, n_heads, kv_head,
                                   block_table, layout, k_pool, v_pool, value_dim, scale, out,
                                   out_stride, scratch);
    case KvType::f16:
      return run<Ops<KvType::f16>>(q, q_stride, q_len, first_position, n_heads, kv_head,
                                   block_table, layout, k_pool, v_pool, value_dim, scale, out,
                                   out_stride, scratch);
    case KvType::bf16:
      return run<Ops<KvType::bf16>>(q, q_stride, q_len, first_position, n_heads, kv_head,
                                    block_table, layout, k_pool, v_pool, value_dim, scale, out,
                                    out_stride, scratch);
  }
}

}  // namespace tern::kernels::attention_tiles
