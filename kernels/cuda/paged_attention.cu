#include "kernels/cuda/paged_attention.h"

#include <algorithm>

#include "kernels/cuda/attention_mma_kernel.cuh"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/paged_attention_kernel.cuh"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kMaxGridYZ = 65535;

int splits_for(int keys) {
  return (keys + kAttentionSplit - 1) / kAttentionSplit;
}

bool uses_mma(const PagedAttentionArgs& a) {
  return attention_uses_mma(a.layout.type, a.layout.head_dim);
}

// Query heads of one KV head a block takes at a time: kMmaAttentionVectors on tensor cores (a
// warp's m16 tile), kAttentionVectors on CUDA cores.
int pass_heads(const PagedAttentionArgs& a) {
  return uses_mma(a) ? kMmaAttentionVectors : kAttentionVectors;
}

// Blocks that share one KV head's query heads (a GQA group over pass_heads heads).
int head_passes(const PagedAttentionArgs& a) {
  const int group = a.n_heads / a.layout.n_kv_heads;
  return (group + pass_heads(a) - 1) / pass_heads(a);
}

// What both launchers require of their arguments.
bool valid_common(const PagedAttentionArgs& a) {
  const KvCacheLayout& layout = a.layout;
  if (!paged_attention_supports_head_dim(layout.head_dim)) return false;
  if (layout.type != KvType::f32 && layout.type != KvType::f16 && layout.type != KvType::bf16)
    return false;
  if (layout.block_size <= 0 || layout.n_kv_heads <= 0 || a.n_heads <= 0) return false;
  if (a.n_heads % layout.n_kv_heads != 0) return false;
  if (static_cast<std::int64_t>(layout.n_kv_heads) * head_passes(a) > kMaxGridYZ) return false;
  const std::int64_t row = static_cast<std::int64_t>(a.n_heads) * layout.head_dim;
  if (a.q_stride < row || a.out_stride < row) return false;
  if (a.n_seqs < 0 || a.n_seqs > kMaxGridYZ || a.max_blocks_per_seq <= 0) return false;
  return a.q != nullptr && a.out != nullptr && a.context_lens != nullptr &&
         a.block_tables != nullptr && a.k_pool != nullptr && a.v_pool != nullptr;
}

AttentionParams params_for(const PagedAttentionArgs& a, int rows_per_block, int max_splits) {
  return {a.n_heads,
          a.layout.n_kv_heads,
          a.layout.head_dim,
          a.layout.block_size,
          a.max_blocks_per_seq,
          static_cast<long long>(a.q_stride),
          static_cast<long long>(a.out_stride),
          a.scale,
          head_passes(a),
          rows_per_block,
          max_splits};
}

// The tensor-core kernel where attention_uses_mma holds (decode: one warp, prefill: two), the
// CUDA-core kernel otherwise; one choice per cache layout for decode and prefill alike, so that
// their rows agree bit for bit.
template <int kHeadDim, KvType kType>
void launch_typed(dim3 grid, const PagedAttentionArgs& a, const std::int32_t* query_starts,
                  float* partial_max, float* partial_sum, float* partial_acc,
                  const AttentionParams& params, cudaStream_t stream) {
  if constexpr (attention_uses_mma(kType, kHeadDim)) {
    if (query_starts == nullptr) {
      TERN_LAUNCH((attention_mma_kernel<kHeadDim, kType, kMmaAttentionDecodeWarps, true>), grid,
                  32 * kMmaAttentionDecodeWarps, 0, stream, a.q, a.out, query_starts,
                  a.context_lens, a.block_tables, a.k_pool, a.v_pool, partial_max, partial_sum,
                  partial_acc, params);
    } else {
      TERN_LAUNCH((attention_mma_kernel<kHeadDim, kType, kMmaAttentionPrefillWarps, false>), grid,
                  32 * kMmaAttentionPrefillWarps, 0, stream, a.q, a.out, query_starts,
                  a.context_lens, a.block_tables, a.k_pool, a.v_pool, partial_max, partial_sum,
                  partial_acc, params);
    }
  } else {
    TERN_LAUNCH((paged_attention_kernel<kHeadDim, kType>), grid, kAttentionThreads, 0, stream, a.q,
                a.out, query_starts, a.context_lens, a.block_tables, a.k_pool, a.v_pool,
                partial_max, partial_sum, partial_acc, params);
  }
}

template <int kHeadDim>
void launch_for_head_dim(dim3 grid, const PagedAttentionArgs& a, const std::int32_t* query_starts,
                         float* partial_max, float* partial_sum, float* partial_acc,
                         const AttentionParams& params, cudaStream_t stream) {
  switch (a.layout.type) {
    case KvType::f32:
      return launch_typed<kHeadDim, KvType::f32>(grid, a, query_starts, partial_max, partial_sum,
                                                 partial_acc, params, stream);
    case KvType::f16:
      return launch_typed<kHeadDim, KvType::f16>(grid, a, query_starts, partial_max, partial_sum,
                                                 partial_acc, params, stream);
    case KvType::bf16:
      return launch_typed<kHeadDim, KvType::bf16>(grid, a, query_starts, partial_max, partial_sum,
                                                  partial_acc, params, stream);
  }
}

// The head dimensions the kernel is compiled for: the one list, for validation and dispatch.
template <int... kHeadDims>
struct HeadDims {
  static bool contains(int head_dim) { return ((head_dim == kHeadDims) || ...); }
  static void launch(dim3 grid, const PagedAttentionArgs& a, const std::int32_t* query_starts,
                     float* partial_max, float* partial_sum, float* partial_acc,
                     const AttentionParams& params, cudaStream_t stream) {
    static_cast<void>(((a.layout.head_dim == kHeadDims &&
                        (launch_for_head_dim<kHeadDims>(grid, a, query_starts, partial_max,
                                                        partial_sum, partial_acc, params, stream),
                         true)) ||
                       ...));
  }
};
using CompiledHeadDims = HeadDims<16, 24, 32, 40, 64, 80, 96, 128>;

}  // namespace

bool paged_attention_supports_head_dim(int head_dim) {
  return CompiledHeadDims::contains(head_dim);
}

std::size_t paged_attention_decode_workspace_bytes(int n_seqs, int n_heads, int head_dim,
                                                   int max_context) {
  if (n_seqs <= 0 || n_heads <= 0 || head_dim <= 0 || max_context <= 0) return 0;
  return static_cast<std::size_t>(n_seqs) * static_cast<std::size_t>(n_heads) *
         static_cast<std::size_t>(splits_for(max_context)) *
         (static_cast<std::size_t>(head_dim) + 2) * sizeof(float);
}

cudaError_t launch_paged_attention_decode(const PagedAttentionArgs& args, int max_context,
                                          float* workspace, std::size_t workspace_bytes,
                                          cudaStream_t stream) {
  if (!valid_common(args) || max_context <= 0) return cudaErrorInvalidValue;
  const int max_splits = splits_for(max_context);
  if (static_cast<std::int64_t>(max_splits) * head_passes(args) * args.layout.n_kv_heads >
      kMaxGridYZ)
    return cudaErrorInvalidValue;
  if (static_cast<std::int64_t>(max_context) >
      static_cast<std::int64_t>(args.max_blocks_per_seq) * args.layout.block_size)
    return cudaErrorInvalidValue;
  if (args.n_seqs == 0) return cudaSuccess;
  const std::size_t needed = paged_attention_decode_workspace_bytes(
      args.n_seqs, args.n_heads, args.layout.head_dim, max_context);
  if (workspace == nullptr || workspace_bytes < needed) return cudaErrorInvalidValue;

  // Workspace: maxima, sums, then unnormalized outputs of each (sequence, head, partition).
  const std::size_t slots = static_cast<std::size_t>(args.n_seqs) *
                            static_cast<std::size_t>(args.n_heads) *
                            static_cast<std::size_t>(max_splits);
  float* partial_max = workspace;
  float* partial_sum = workspace + slots;
  float* partial_acc = workspace + 2 * slots;
  const AttentionParams params = params_for(args, 1, max_splits);
  const dim3 grid(1, static_cast<unsigned>(args.layout.n_kv_heads * head_passes(args) * max_splits),
                  static_cast<unsigned>(args.n_seqs));
  CompiledHeadDims::launch(grid, args, nullptr, partial_max, partial_sum, partial_acc, params,
                           stream);
  const cudaError_t first = cudaGetLastError();
  if (first != cudaSuccess || max_context <= kAttentionSplit) return first;
  TERN_LAUNCH(paged_attention_merge_kernel,
              dim3(static_cast<unsigned>(args.n_heads), static_cast<unsigned>(args.n_seqs)),
              kAttentionMergeThreads, 0, stream, partial_max, partial_sum, partial_acc,
              args.context_lens, args.out, params);
  return cudaGetLastError();
}

cudaError_t launch_paged_attention_prefill(const PagedAttentionArgs& args,
                                           const std::int32_t* query_starts, int max_q_len,
                                           cudaStream_t stream) {
  if (!valid_common(args) || query_starts == nullptr || max_q_len <= 0)
    return cudaErrorInvalidValue;
  if (args.n_seqs == 0) return cudaSuccess;
  const int group = args.n_heads / args.layout.n_kv_heads;
  const int block_vectors =
      uses_mma(args) ? kMmaAttentionVectors * kMmaAttentionPrefillWarps : kAttentionVectors;
  const int rows_per_block = block_vectors / std::min(group, pass_heads(args));
  const AttentionParams params = params_for(args, rows_per_block, 0);
  const dim3 grid(static_cast<unsigned>((max_q_len + rows_per_block - 1) / rows_per_block),
                  static_cast<unsigned>(args.layout.n_kv_heads * head_passes(args)),
                  static_cast<unsigned>(args.n_seqs));
  CompiledHeadDims::launch(grid, args, query_starts, nullptr, nullptr, nullptr, params, stream);
  return cudaGetLastError();
}

// Every instantiation CompiledHeadDims launches: the CUDA-core kernel for F32 caches and the head
// dims that are not 16-value steps, the tensor-core kernels, decode's and prefill's, for the rest.
#define TERN_ATTENTION_MMA_ENTRIES(head_dim, type)                                     \
  TERN_KERNEL_ENTRY(                                                                   \
      (attention_mma_kernel<head_dim, KvType::type, kMmaAttentionDecodeWarps, true>)), \
      TERN_KERNEL_ENTRY(                                                               \
          (attention_mma_kernel<head_dim, KvType::type, kMmaAttentionPrefillWarps, false>))
TERN_KERNEL_TABLE_PART(paged_attention,
                       TERN_KERNEL_ENTRY((paged_attention_kernel<16, KvType::f32>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<24, KvType::f32>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<24, KvType::f16>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<24, KvType::bf16>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<32, KvType::f32>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<40, KvType::f32>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<40, KvType::f16>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<40, KvType::bf16>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<64, KvType::f32>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<80, KvType::f32>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<96, KvType::f32>)),
                       TERN_KERNEL_ENTRY((paged_attention_kernel<128, KvType::f32>)),
                       TERN_KERNEL_ENTRY(paged_attention_merge_kernel),
                       TERN_ATTENTION_MMA_ENTRIES(16, f16), TERN_ATTENTION_MMA_ENTRIES(16, bf16),
                       TERN_ATTENTION_MMA_ENTRIES(32, f16), TERN_ATTENTION_MMA_ENTRIES(32, bf16),
                       TERN_ATTENTION_MMA_ENTRIES(64, f16), TERN_ATTENTION_MMA_ENTRIES(64, bf16),
                       TERN_ATTENTION_MMA_ENTRIES(80, f16), TERN_ATTENTION_MMA_ENTRIES(80, bf16),
                       TERN_ATTENTION_MMA_ENTRIES(96, f16), TERN_ATTENTION_MMA_ENTRIES(96, bf16),
                       TERN_ATTENTION_MMA_ENTRIES(128, f16), TERN_ATTENTION_MMA_ENTRIES(128, bf16))
#undef TERN_ATTENTION_MMA_ENTRIES

TERN_CUDA_NAMESPACE_END
