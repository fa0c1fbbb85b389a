#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/kv_store.h"

namespace tern::kernels {

// paged_attention visits keys in tiles of this many positions, aligned to absolute positions
// (tile t covers positions [t * kAttentionKeyTile, (t + 1) * kAttentionKeyTile)), with an online
// softmax carried from tile to tile. Because the tiling is fixed by position, a query row's
// arithmetic depends only on its own position, not on how many rows share the call: decode and
// prefill give bit-identical rows.
inline constexpr int kAttentionKeyTile = 64;
// Query heads of one KV head processed together, so each K/V tile is read from memory once per
// pass rather than once per head. Larger GQA groups take several passes.
inline constexpr int kAttentionHeadsPerPass = 8;
// Rows of K or V a variant may convert to f32 at once (AttentionScratch::staging()).
inline constexpr int kAttentionStagedRows = 16;

// Per-thread working memory of paged_attention, allocated once so the kernel allocates nothing.
class AttentionScratch {
 public:
  explicit AttentionScratch(int max_context, int head_dim);

  int max_context() const { return max_context_; }
  int head_dim() const { return head_dim_; }
  // [kAttentionHeadsPerPass][kAttentionKeyTile] scores, then probabilities, of the current tile.
  float* scores() { return scores_.data(); }
  // [kAttentionHeadsPerPass][value_dim] unnormalized outputs (value_dim <= head_dim).
  float* accumulators() { return accumulators_.data(); }
  // kAttentionStagedRows rows of keys or values converted to f32 (head_dim rounded up to 16).
  float* staging() { return staging_.data(); }

 private:
  int max_context_;
  int head_dim_;
  std::vector<float> scores_;
  std::vector<float> accumulators_;
  std::vector<float> staging_;
};

// Causal attention of one sequence's chunk of q_len query rows, at positions first_position ..
// first_position + q_len - 1 (all already in the cache), for the query heads of KV head kv_head:
// heads kv_head * group .. + group - 1, group = n_heads / layout.n_kv_heads. q is
// [q_len][n_heads * head_dim] and out [q_len][n_heads * value_dim], with rows q_stride /
// out_stride floats apart; only this KV head's query heads are read and written. Row i attends to
// cache positions 0 .. first_position + i, softmax(q.k * scale) weighted V.
// Value rows have the key rows' layout (head_dim values a slot), of which only the first
// value_dim (1 .. head_dim) are weighted and summed. value_dim == head_dim is ordinary attention;
// value_dim < head_dim with v_pool == k_pool is multi-head latent attention in its absorbed form
// (DeepSeek-V3), whose one cached row per token is [latent | rope key] and whose value is the
// latent: v_pool may alias k_pool. Single-threaded: callers run (sequence, kv_head) pairs in
// parallel, each with its own scratch.
void paged_attention(const float* q, std::int64_t q_stride, int q_len, int first_position,
                     int n_heads, int kv_head, const std::int32_t* block_table,
                     const KvCacheLayout& layout, const void* k_pool, const void* v_pool,
                     int value_dim, float scale, float* out, std::int64_t out_stride,
                     AttentionScratch& scratch);

// The instruction-set variants paged_attention dispatches to, for tests and benchmarks. The AVX2
// one needs AVX2+FMA+F16C, the AVX-512 one CpuFeatures::has_avx512().
void paged_attention_scalar(const float* q, std::int64_t q_stride, int q_len, int first_position,
                            int n_heads, int kv_head, const std::int32_t* block_table,
                            const KvCacheLayout& layout, const void* k_pool, const void* v_pool,
                            int value_dim, float scale, float* out, std::int64_t out_stride,
                            AttentionScratch& scratch);
void paged_attention_avx2(const float* q, std::int64_t q_stride, int q_len, int first_position,
                          int n_heads, int kv_head, const std::int32_t* block_table,
                          const KvCacheLayout& layout, const void* k_pool, const void* v_pool,
                          int value_dim, float scale, float* out, std::int64_t out_stride,
                          AttentionScratch& scratch);
void paged_attention_avx512(const float* q, std::int64_t q_stride, int q_len, int first_position,
                            int n_heads, int kv_head, const std::int32_t* block_table,
                            const KvCacheLayout& layout, const void* k_pool, const void* v_pool,
                            int value_dim, float scale, float* out, std::int64_t out_stride,
                            AttentionScratch& scratch);

}  // namespace tern::kernels
