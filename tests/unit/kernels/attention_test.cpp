#include "kernels/cpu/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/kv_store.h"

namespace tern::kernels {
namespace {

using AttentionFunction = void (*)(const float*, std::int64_t, int, int, int, int,
                                   const std::int32_t*, const KvCacheLayout&, const void*,
                                   const void*, int, float, float*, std::int64_t,
                                   AttentionScratch&);

struct Variant {
  const char* name;
  AttentionFunction function;
  bool supported;
};

std::vector<Variant> variants() {
  const CpuFeatures& f = cpu_features();
  return {{"scalar", paged_attention_scalar, true},
          {"avx2", paged_attention_avx2, f.avx2 && f.fma && f.f16c},
          {"avx512", paged_attention_avx512, f.has_avx512()},
          {"dispatched", paged_attention, true}};
}

const char* type_name(KvType type) {
  return type == KvType::f32 ? "f32" : type == KvType::f16 ? "f16" : "bf16";
}

// One sequence's paged cache with `context` positions stored through store_kv, its blocks
// scattered in the pool. Slots past the last position hold NaN, so reading them would show.
struct Cache {
  KvCacheLayout layout;
  int context;
  std::vector<std::int32_t> block_table;
  std::vector<std::byte> k_pool, v_pool;
  std::vector<float> k, v;  // [context][n_kv_heads * head_dim], as stored (rounded to the type)

  Cache(KvCacheLayout cache_layout, int context_positions, std::uint32_t seed)
      : layout(cache_layout), context(context_positions) {
    const int blocks = (context + layout.block_size - 1) / layout.block_size;
    block_table.resize(blocks);
    std::iota(block_table.begin(), block_table.end(), 0);
    std::mt19937 rng(seed);
    std::shuffle(block_table.begin(), block_table.end(), rng);
    for (std::int32_t& b : block_table) b = 2 * b + 1;  // leave unused blocks between
    const std::size_t pool_bytes = (2 * blocks + 1) * kv_block_bytes(layout);
    k_pool.resize(pool_bytes);
    v_pool.resize(pool_bytes);
    fill_nan(k_pool);
    fill_nan(v_pool);
    const int width = layout.n_kv_heads * layout.head_dim;
    k.resize(static_cast<std::size_t>(context) * width);
    v.resize(k.size());
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    std::vector<std::int32_t> positions(context);
    std::iota(positions.begin(), positions.end(), 0);
    store_kv(k.data(), width, v.data(), width, context, positions.data(), block_table.data(),
             layout, k_pool.data(), v_pool.data());
    for (float& x : k) x = rounded(x);
    for (float& x : v) x = rounded(x);
  }

  float rounded(float x) const {
    if (layout.type == KvType::f16) return f16_to_f32(f32_to_f16(x));
    if (layout.type == KvType::bf16) return bf16_to_f32(f32_to_bf16(x));
    return x;
  }

  void fill_nan(std::vector<std::byte>& pool) const {
    if (layout.type == KvType::f32) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      for (std::size_t i = 0; i + 4 <= pool.size(); i += 4) std::memcpy(&pool[i], &nan, 4);
    } else {
      const std::uint16_t nan = 0x7fc0u;  // NaN in both f16 and bf16
      for (std::size_t i = 0; i + 2 <= pool.size(); i += 2) std::memcpy(&pool[i], &nan, 2);
    }
  }
};

// Causal attention in double from the definition, on the values as stored in the cache.
std::vector<double> reference(const Cache& cache, const std::vector<float>& q, int q_len,
                              int first_position, int n_heads, float scale) {
  const int head_dim = cache.layout.head_dim;
  const int group = n_heads / cache.layout.n_kv_heads;
  const int width = cache.layout.n_kv_heads * head_dim;
  std::vector<double> out(static_cast<std::size_t>(q_len) * n_heads * head_dim, 0.0);
  for (int row = 0; row < q_len; ++row) {
    const int keys = first_position + row + 1;
    for (int head = 0; head < n_heads; ++head) {
      const int kv_head = head / group;
      const float* query = &q[(static_cast<std::size_t>(row) * n_heads + head) * head_dim];
      std::vector<double> scores(keys);
      double maximum = -INFINITY;
      for (int j = 0; j < keys; ++j) {
        double dot = 0;
        for (int d = 0; d < head_dim; ++d) {
          dot += double{query[d]} *
                 cache.k[static_cast<std::size_t>(j) * width + kv_head * head_dim + d];
        }
        scores[j] = dot * scale;
        maximum = std::max(maximum, scores[j]);
      }
      double sum = 0;
      for (double& s : scores) sum += s = std::exp(s - maximum);
      double* output = &out[(static_cast<std::size_t>(row) * n_heads + head) * head_dim];
      for (int j = 0; j < keys; ++j) {
        for (int d = 0; d < head_dim; ++d) {
          output[d] += scores[j] / sum *
                       cache.v[static_cast<std::size_t>(j) * width + kv_head * head_dim + d];
        }
      }
    }
  }
  return out;
}

std::vector<float> random_queries(int q_len, int n_heads, int head_dim, float scale,
                                  std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> q(static_cast<std::size_t>(q_len) * n_heads * head_dim);
  for (float& x : q) x = normal(rng);
  return q;
}

// Runs every KV head over rows [first, first + count) of q/out ([rows][n_heads * head_dim]).
void run_chunk(const Variant& variant, const Cache& cache, const std::vector<float>& q, int first,
               int count, int n_heads, float scale, std::vector<float>& out) {
  const std::int64_t stride = static_cast<std::int64_t>(n_heads) * cache.layout.head_dim;
  AttentionScratch scratch(cache.context, cache.layout.head_dim);
  for (int kv_head = 0; kv_head < cache.layout.n_kv_heads; ++kv_head) {
    variant.function(q.data() + first * stride, stride, count, first, n_heads, kv_head,
                     cache.block_table.data(), cache.layout, cache.k_pool.data(),
                     cache.v_pool.data(), cache.layout.head_dim, scale, out.data() + first * stride,
                     stride, scratch);
  }
}

struct Shape {
  KvType type;
  int block_size;
  int n_heads;
  int n_kv_heads;
  int head_dim;
  int context;
};

std::string describe(const Variant& variant, const Shape& s) {
  return std::string(variant.name) + " " + type_name(s.type) +
         " block=" + std::to_string(s.block_size) + " heads=" + std::to_string(s.n_heads) + "/" +
         std::to_string(s.n_kv_heads) + " head_dim=" + std::to_string(s.head_dim) +
         " context=" + std::to_string(s.context);
}

std::vector<Shape> shapes() {
  std::vector<Shape> result;
  for (const KvType type : {KvType::f32, KvType::f16, KvType::bf16}) {
    result.push_back({type, 16, 8, 2, 64, 150});    // GQA group 4, several key tiles
    result.push_back({type, 5, 4, 4, 72, 70});      // blocks straddle tiles; head_dim tail
    result.push_back({type, 128, 12, 1, 128, 90});  // group 12: two head passes; big blocks
    result.push_back({type, 1, 2, 1, 40, 20});      // one position per block
  }
  return result;
}

// Every variant and KV type against double precision: |out - ref| <= 2e-5 + 1e-4 * |ref|. Outputs
// are convex combinations of O(1) values; the error comes from float dot products over head_dim,
// the ~2 ulp exponentials, and float accumulation over up to 150 keys.
TEST(PagedAttention, MatchesDoubleReferenceOnEveryVariant) {
  for (const Shape& shape : shapes()) {
    const Cache cache({shape.type, shape.block_size, shape.n_kv_heads, shape.head_dim},
                      shape.context, 41);
    const int q_len = shape.context;
    // Large query norms make the softmax peaked, so tiles' maxima differ and get rescaled.
    const std::vector<float> q = random_queries(q_len, shape.n_heads, shape.head_dim, 2.0f, 42);
    const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
    const std::vector<double> expected = reference(cache, q, q_len, 0, shape.n_heads, scale);
    for (const Variant& variant : variants()) {
      if (!variant.supported) continue;
      std::vector<float> out(q.size(), -1234.0f);
      run_chunk(variant, cache, q, 0, q_len, shape.n_heads, scale, out);
      for (std::size_t i = 0; i < out.size(); ++i) {
        ASSERT_NEAR(out[i], expected[i], 2e-5 + 1e-4 * std::abs(expected[i]))
            << describe(variant, shape) << " element " << i;
      }
    }
  }
}

// Only the query heads of the given KV head are written; the rest of out is left alone.
TEST(PagedAttention, WritesOnlyItsKvHeadsQueryHeads) {
  const Cache cache({KvType::f16, 16, 4, 32}, 20, 43);
  const int n_heads = 8, q_len = 3, first_position = 17;
  const std::vector<float> q = random_queries(q_len, n_heads, 32, 1.0f, 44);
  for (const Variant& variant : variants()) {
    if (!variant.supported) continue;
    std::vector<float> out(q.size(), -1234.0f);
    AttentionScratch scratch(cache.context, 32);
    variant.function(q.data(), n_heads * 32, q_len, first_position, n_heads, 2,
                     cache.block_table.data(), cache.layout, cache.k_pool.data(),
                     cache.v_pool.data(), 32, 0.2f, out.data(), n_heads * 32, scratch);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const int head = static_cast<int>(i % (n_heads * 32)) / 32;
      if (head == 4 || head == 5) {
        EXPECT_NE(out[i], -1234.0f) << variant.name;
      } else {
        EXPECT_EQ(out[i], -1234.0f) << variant.name;
      }
    }
  }
}

// The batch-invariance contract: each row's output is bit-identical whether computed in one
// prefill chunk, in chunks split anywhere, or one row at a time as in decode.
TEST(PagedAttention, RowsAreBitIdenticalAcrossChunkings) {
  const std::vector<std::vector<int>> chunkings = {
      {40}, {16, 24}, {1, 39}, {13, 13, 14}, std::vector<int>(40, 1)};
  for (const Shape& base : shapes()) {
    Shape shape = base;
    shape.context = 40;
    const Cache cache({shape.type, shape.block_size, shape.n_kv_heads, shape.head_dim},
                      shape.context, 45);
    const std::vector<float> q = random_queries(40, shape.n_heads, shape.head_dim, 2.0f, 46);
    const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
    for (const Variant& variant : variants()) {
      if (!variant.supported) continue;
      std::vector<float> first_result;
      for (const std::vector<int>& chunks : chunkings) {
        std::vector<float> out(q.size(), 0.0f);
        int first = 0;
        for (const int count : chunks) {
          run_chunk(variant, cache, q, first, count, shape.n_heads, scale, out);
          first += count;
        }
        if (first_result.empty()) {
          first_result = out;
        } else {
          EXPECT_EQ(0, std::memcmp(first_result.data(), out.data(), out.size() * sizeof(float)))
              << describe(variant, shape) << " chunks=" << chunks.size();
        }
      }
    }
  }
}

// Long context: rows past several key tiles, split across a tile boundary (64) and not.
TEST(PagedAttention, LongContextRowsAreBitIdenticalAcrossChunkings) {
  const Shape shape{KvType::f16, 16, 8, 2, 128, 300};
  const Cache cache({shape.type, shape.block_size, shape.n_kv_heads, shape.head_dim}, shape.context,
                    47);
  const std::vector<float> q = random_queries(300, shape.n_heads, shape.head_dim, 2.0f, 48);
  const float scale = 1.0f / std::sqrt(128.0f);
  for (const Variant& variant : variants()) {
    if (!variant.supported) continue;
    std::vector<float> whole(q.size(), 0.0f), split(q.size(), 0.0f), decode(q.size(), 0.0f);
    run_chunk(variant, cache, q, 0, 300, shape.n_heads, scale, whole);
    run_chunk(variant, cache, q, 0, 70, shape.n_heads, scale, split);
    run_chunk(variant, cache, q, 70, 187, shape.n_heads, scale, split);
    run_chunk(variant, cache, q, 257, 43, shape.n_heads, scale, split);
    for (int row = 0; row < 300; ++row) {
      run_chunk(variant, cache, q, row, 1, shape.n_heads, scale, decode);
    }
    EXPECT_EQ(0, std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)))
        << variant.name;
    EXPECT_EQ(0, std::memcmp(whole.data(), decode.data(), whole.size() * sizeof(float)))
        << variant.name;
  }
}

// Multi-head latent attention in its absorbed form (DeepSeek-V3): one cached row per token, read as
// the key whole and as the value through its first value_dim values, with v_pool == k_pool.
struct LatentShape {
  KvType type;
  int block_size;
  int n_heads;
  int n_kv_heads;
  int head_dim;
  int value_dim;
  int context;
  int first_position;  // of the prefill chunk, which runs to the end of the context
};

std::string describe(const Variant& variant, const LatentShape& s) {
  return std::string(variant.name) + " " + type_name(s.type) +
         " block=" + std::to_string(s.block_size) + " heads=" + std::to_string(s.n_heads) + "/" +
         std::to_string(s.n_kv_heads) + " head_dim=" + std::to_string(s.head_dim) +
         " value_dim=" + std::to_string(s.value_dim) + " context=" + std::to_string(s.context) +
         " first_position=" + std::to_string(s.first_position);
}

std::vector<LatentShape> latent_shapes() {
  std::vector<LatentShape> result;
  for (const KvType type : {KvType::f32, KvType::f16, KvType::bf16}) {
    result.push_back({type, 16, 4, 1, 40, 32, 150, 100});    // the tiny test model; group 4
    result.push_back({type, 5, 16, 1, 40, 32, 150, 61});     // group 16: two head passes
    result.push_back({type, 16, 16, 1, 576, 512, 140, 60});  // DeepSeek-V3's 512 + 64 rope
    result.push_back({type, 7, 8, 2, 24, 16, 130, 1});       // two KV heads; head_dim tail
    result.push_back({type, 3, 12, 1, 72, 36, 100, 30});     // value_dim tail of every width
    result.push_back({type, 1, 4, 1, 5, 3, 70, 0});          // tiny dims: tails only
  }
  return result;
}

// Latent attention in double from the definition: softmax(q.k * scale) weighted sum of the first
// value_dim values of each key, as stored. Rows of out are [n_heads * value_dim].
std::vector<double> latent_reference(const Cache& cache, const std::vector<float>& q, int q_len,
                                     int first_position, int n_heads, int value_dim, float scale) {
  const int head_dim = cache.layout.head_dim;
  const int group = n_heads / cache.layout.n_kv_heads;
  const int width = cache.layout.n_kv_heads * head_dim;
  std::vector<double> out(static_cast<std::size_t>(q_len) * n_heads * value_dim, 0.0);
  for (int row = 0; row < q_len; ++row) {
    const int keys = first_position + row + 1;
    for (int head = 0; head < n_heads; ++head) {
      const int kv_head = head / group;
      const float* query = &q[(static_cast<std::size_t>(row) * n_heads + head) * head_dim];
      std::vector<double> scores(keys);
      double maximum = -INFINITY;
      for (int j = 0; j < keys; ++j) {
        double dot = 0;
        for (int d = 0; d < head_dim; ++d) {
          dot += double{query[d]} *
                 cache.k[static_cast<std::size_t>(j) * width + kv_head * head_dim + d];
        }
        scores[j] = dot * scale;
        maximum = std::max(maximum, scores[j]);
      }
      double sum = 0;
      for (double& s : scores) sum += s = std::exp(s - maximum);
      double* output = &out[(static_cast<std::size_t>(row) * n_heads + head) * value_dim];
      for (int j = 0; j < keys; ++j) {
        for (int d = 0; d < value_dim; ++d) {
          output[d] += scores[j] / sum *
                       cache.k[static_cast<std::size_t>(j) * width + kv_head * head_dim + d];
        }
      }
    }
  }
  return out;
}

// Rows [first, first + count) of the chunk that starts at shape.first_position: q is
// [rows][n_heads * head_dim], out [rows][out_stride] with out_stride >= n_heads * value_dim.
void run_latent_chunk(const Variant& variant, const Cache& cache, const LatentShape& shape,
                      const std::vector<float>& q, int first, int count, float scale,
                      std::vector<float>& out, std::int64_t out_stride) {
  const std::int64_t q_stride = static_cast<std::int64_t>(shape.n_heads) * shape.head_dim;
  AttentionScratch scratch(cache.context, shape.head_dim);
  for (int kv_head = 0; kv_head < shape.n_kv_heads; ++kv_head) {
    variant.function(q.data() + first * q_stride, q_stride, count, shape.first_position + first,
                     shape.n_heads, kv_head, cache.block_table.data(), cache.layout,
                     cache.k_pool.data(), cache.k_pool.data(), shape.value_dim, scale,
                     out.data() + first * out_stride, out_stride, scratch);
  }
}

// Every variant and KV type, value_dim < head_dim with v_pool == k_pool, a prefill chunk past
// position 0, against double precision: |out - ref| <= 2e-5 + 1e-4 * |ref|, as for ordinary
// attention (the same float dot products, ~2 ulp exponentials and float accumulation over up to
// 150 keys; head_dim 576 adds rounding to the dots, but scores stay O(1) so their absolute error,
// hence the weights' relative error, stays near 1e-6). Measured: at most 9.8e-6 (0.38 of the
// bound), from the scalar variant's one sequential sum over 576 dimensions; 2.1e-6 or less for
// the vector variants. Each row's out has 3 padding floats past n_heads * value_dim that must
// stay untouched.
TEST(PagedAttention, LatentValuesMatchDoubleReferenceOnEveryVariant) {
  double worst_error = 0;
  for (const LatentShape& shape : latent_shapes()) {
    const Cache cache({shape.type, shape.block_size, shape.n_kv_heads, shape.head_dim},
                      shape.context, 51);
    const int q_len = shape.context - shape.first_position;
    const std::vector<float> q = random_queries(q_len, shape.n_heads, shape.head_dim, 2.0f, 52);
    const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
    const std::vector<double> expected = latent_reference(cache, q, q_len, shape.first_position,
                                                          shape.n_heads, shape.value_dim, scale);
    const int out_width = shape.n_heads * shape.value_dim;
    const int out_stride = out_width + 3;
    for (const Variant& variant : variants()) {
      if (!variant.supported) continue;
      std::vector<float> out(static_cast<std::size_t>(q_len) * out_stride, -1234.0f);
      run_latent_chunk(variant, cache, shape, q, 0, q_len, scale, out, out_stride);
      for (int row = 0; row < q_len; ++row) {
        for (int i = 0; i < out_stride; ++i) {
          const float actual = out[static_cast<std::size_t>(row) * out_stride + i];
          if (i >= out_width) {
            ASSERT_EQ(actual, -1234.0f) << describe(variant, shape) << " row " << row;
            continue;
          }
          const double want = expected[static_cast<std::size_t>(row) * out_width + i];
          ASSERT_NEAR(actual, want, 2e-5 + 1e-4 * std::abs(want))
              << describe(variant, shape) << " row " << row << " column " << i;
          worst_error = std::max(worst_error, std::abs(actual - want));
        }
      }
    }
  }
  std::printf("latent attention: max |error| against double %.3g\n", worst_error);
}

// Batch invariance with latent values: a row alone (q_len 1 at its position, as in decode) and in
// chunks split across block and key-tile boundaries is bit-identical to the row in one chunk.
TEST(PagedAttention, LatentRowsAreBitIdenticalAloneAndInAChunk) {
  for (const LatentShape& shape : latent_shapes()) {
    const Cache cache({shape.type, shape.block_size, shape.n_kv_heads, shape.head_dim},
                      shape.context, 53);
    const int q_len = shape.context - shape.first_position;
    const std::vector<float> q = random_queries(q_len, shape.n_heads, shape.head_dim, 2.0f, 54);
    const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
    const std::int64_t out_stride = static_cast<std::int64_t>(shape.n_heads) * shape.value_dim;
    for (const Variant& variant : variants()) {
      if (!variant.supported) continue;
      const std::size_t size = static_cast<std::size_t>(q_len) * out_stride;
      std::vector<float> whole(size, 0.0f), split(size, 0.0f), alone(size, 0.0f);
      run_latent_chunk(variant, cache, shape, q, 0, q_len, scale, whole, out_stride);
      const int middle = q_len / 3 + 1;
      run_latent_chunk(variant, cache, shape, q, 0, middle, scale, split, out_stride);
      run_latent_chunk(variant, cache, shape, q, middle, q_len - middle, scale, split, out_stride);
      for (int row = 0; row < q_len; ++row) {
        run_latent_chunk(variant, cache, shape, q, row, 1, scale, alone, out_stride);
      }
      EXPECT_EQ(0, std::memcmp(whole.data(), split.data(), size * sizeof(float)))
          << describe(variant, shape);
      EXPECT_EQ(0, std::memcmp(whole.data(), alone.data(), size * sizeof(float)))
          << describe(variant, shape);
    }
  }
}

}  // namespace
}  // namespace tern::kernels
