#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/kv_store.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"

// Plain data, the same type in the nvcc and the emulated build.
namespace tern::kernels::cuda {

// One launch's attention over a layer's paged KV cache, laid out as the CPU's
// (kernels/cpu/kv_store.h: K of block b at k_pool + b * kv_block_bytes(layout), V alike; f32, f16
// or bf16). Every pointer is device memory. A query row attends to its sequence's cache positions
// 0 .. its own position, softmax(q.k * scale) weighted V, as kernels/cpu/attention.h's
// paged_attention; query head h reads KV head h / (n_heads / n_kv_heads) (GQA, any group size).
// A sequence whose context_lens entry is past what its block table row reaches (or, in decode,
// past max_context) is skipped and its rows left unwritten: those are device data the launchers
// cannot check. Block table entries must name blocks of the pools.
struct PagedAttentionArgs {
  const float* q = nullptr;  // [rows][n_heads * head_dim], rows q_stride floats apart
  std::int64_t q_stride = 0;
  float* out = nullptr;  // same shape, rows out_stride floats apart
  std::int64_t out_stride = 0;
  // context_lens[s]: keys of sequence s, its query rows included (they are in the cache already).
  const std::int32_t* context_lens = nullptr;
  // block_tables[s * max_blocks_per_seq + i]: the cache block of sequence s's positions
  // i * block_size .. (i + 1) * block_size - 1.
  const std::int32_t* block_tables = nullptr;
  int max_blocks_per_seq = 0;
  int n_seqs = 0;
  const void* k_pool = nullptr;
  const void* v_pool = nullptr;
  KvCacheLayout layout{};
  int n_heads = 0;
  float scale = 1.0f;
};

}  // namespace tern::kernels::cuda

TERN_CUDA_NAMESPACE_BEGIN

// Head dimensions the kernels are compiled for: 16, 24, 32, 40, 64, 80, 96, 128.
bool paged_attention_supports_head_dim(int head_dim);

// Bytes of the workspace launch_paged_attention_decode needs for n_seqs sequences of at most
// max_context keys (partial results of each 256-position partition).
std::size_t paged_attention_decode_workspace_bytes(int n_seqs, int n_heads, int head_dim,
                                                   int max_context);

// Decode: one query row per sequence, row s of q and out for sequence s, at position
// context_lens[s] - 1. max_context bounds every context_lens[s] (it sizes the grid). Long contexts
// are split into 256-position partitions across blocks and merged by a second kernel, in a fixed
// order: a row's bits depend on its own keys only. cudaErrorInvalidValue without launching for a
// bad shape, stride, pointer or a workspace smaller than paged_attention_decode_workspace_bytes.
cudaError_t launch_paged_attention_decode(const PagedAttentionArgs& args, int max_context,
                                          float* workspace, std::size_t workspace_bytes,
                                          cudaStream_t stream);

// Prefill (causal, over a cached prefix): sequence s's query rows are rows query_starts[s] ..
// query_starts[s + 1] - 1 of q and out, at positions context_lens[s] - q_len .. context_lens[s] - 1
// (q_len = query_starts[s + 1] - query_starts[s] <= max_q_len). A row's result has the same bits as
// the same row through launch_paged_attention_decode. cudaErrorInvalidValue without launching for
// bad input.
cudaError_t launch_paged_attention_prefill(const PagedAttentionArgs& args,
                                           const std::int32_t* query_starts, int max_q_len,
                                           cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
