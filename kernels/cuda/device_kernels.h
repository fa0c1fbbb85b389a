#pragma once

// Every CUDA kernel launcher of one build behind a table of plain function pointers: the same
// launchers as kernels/cuda/*.h, with the stream as void* and the CUDA status as an int (0 is
// success; error_name gives its name). Host code compiled once (the CUDA backend) calls the
// table of the device it runs on: nvcc's kernels on a GPU, the emulator's on the emulated
// device. This header names no CUDA type, so such code needs neither CUDA header.

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/kv_store.h"
#include "kernels/cuda/launch_types.h"
#include "kernels/rope_config.h"
#include "kernels/tensor_type.h"

namespace tern::kernels::cuda {

struct DeviceKernels {
  const char* (*error_name)(int status);

  int (*embedding_gather)(TensorType type, const void* table, long long vocab, int hidden,
                          const std::int32_t* token_ids, int tokens, float* out, void* stream);
  int (*rms_norm)(const float* x, const float* weight, float* y, int rows, int cols, float eps,
                  void* stream);
  int (*rms_norm_residual)(float* residual, const float* delta, const float* weight, float* y,
                           int rows, int cols, float eps, void* stream);
  int (*rms_norm_per_head)(const float* x, const float* weight, float* y, long long tokens,
                           long long row_stride, int n_heads, int head_dim, float eps,
                           void* stream);
  int (*quantize_q8_1)(const float* x, int tokens, int cols, BlockQ8_1* out, void* stream);
  int (*round_activations)(const float* x, int tokens, int cols, TensorType type,
                           std::uint16_t* out, void* stream);
  int (*gemv)(const DeviceWeights& w, const DeviceActivations& x, int tokens, float* y,
              void* stream);
  int (*gemm)(const DeviceWeights& w, const DeviceActivations& x, int tokens, float* y,
              void* stream);
  int (*add_bias)(float* rows, long long row_stride, long long tokens, const float* bias, int width,
                  void* stream);
  int (*rope)(float* x, long long tokens, long long row_stride, int n_heads, int head_dim,
              const std::int32_t* positions, const float* inverse_frequencies, int pairs,
              RopeLayout layout, void* stream);
  int (*store_kv)(const float* k, long long k_stride, const float* v, long long v_stride,
                  long long tokens, const std::int32_t* slots, const KvCacheLayout& layout,
                  std::int32_t num_blocks, void* k_pool, void* v_pool, void* stream);
  bool (*paged_attention_supports_head_dim)(int head_dim);
  std::size_t (*paged_attention_decode_workspace_bytes)(int n_seqs, int n_heads, int head_dim,
                                                        int max_context);
  int (*paged_attention_decode)(const PagedAttentionArgs& args, int max_context, float* workspace,
                                std::size_t workspace_bytes, void* stream);
  int (*paged_attention_prefill)(const PagedAttentionArgs& args, const std::int32_t* query_starts,
                                 int max_q_len, void* stream);
  int (*add)(float* into, const float* from, long long n, void* stream);
  int (*silu_mul)(const float* gate, const float* up, float* out, long long n, void* stream);
  int (*gather_rows)(const float* from, long long from_rows, long long from_stride,
                     const std::int32_t* row_index, int count, float* to, long long to_stride,
                     int width, void* stream);
  int (*argmax)(const float* logits, int rows, int vocab, std::int32_t* indices, void* stream);
  int (*top_k)(const float* logits, int rows, int vocab, int k, float* values,
               std::int32_t* indices, void* stream);
  int (*copy_blocks)(void* const* k_pools, void* const* v_pools, int layers,
                     std::size_t block_bytes, int blocks_per_pool, const BlockCopy* pairs,
                     int count, void* stream);
  int (*logit_row_sums)(const float* logits, int rows, int vocab, const float* inverse_temperature,
                        float* log_sum_exp, double* scaled_mass, void* stream);
  // A property of the build's expf, so it comes with the build's table.
  double (*logit_row_sums_relative_error)(int vocab);
  int (*logit_row_partial_sums)(const float* logits, int rows, int vocab, const float* row_max,
                                const float* inverse_temperature, double* exp_sum,
                                double* scaled_mass, void* stream);
  // The local sum of tern's deterministic all-reduce (kernels/cuda/sum_ranks.h).
  int (*sum_ranks)(const float* gathered, int ranks, long long count, float* out, void* stream);
  // Grammar-constrained rows' token masks, applied in place (kernels/cuda/token_mask.h).
  int (*token_mask)(float* logits, int rows, int vocab, const std::uint64_t* masks,
                    long long mask_words, long long mask_offset, const std::int32_t* mask_rows,
                    int masked_rows, void* stream);
};

// nvcc's kernels, defined only in a build with CUDA (tern_kernels_cuda).
const DeviceKernels& nvcc_kernels();
// The same kernels compiled against the SIMT emulator (tern_kernels_emulated), always built.
const DeviceKernels& emulated_kernels();

}  // namespace tern::kernels::cuda
