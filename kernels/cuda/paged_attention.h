#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/kv_store.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/launch_types.h"

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
