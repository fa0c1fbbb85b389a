#pragma once

// The plain data the CUDA launchers take: one definition for the nvcc build and the emulated
// build alike (kernels/cuda/cuda_namespace.h), and no CUDA type, so host code compiled once
// (device_kernels.h) can fill them in for either.

#include <cstdint>

#include "kernels/cpu/kv_store.h"
#include "kernels/host_device.h"
#include "kernels/tensor_type.h"

namespace tern::kernels::cuda {

// 32 activation values quantized for integer dot products, after llama.cpp's Q8_1 but with a
// float scale and the exact integer sum: value i = d * qs[i], sum = qs[0] + ... + qs[31]. The
// sum lets Q4_0 and Q4_K weights, whose quants carry an offset, stay in integers.
struct BlockQ8_1 {
  float d;
  std::int32_t sum;
  std::int8_t qs[32];
};
static_assert(sizeof(BlockQ8_1) == 40, "two scalars and 32 quants, 8-byte aligned quants");

inline constexpr int kQ8_1Block = 32;

// A weight matrix in device memory, row-major with rows = output features and cols = input
// features, each row cols values of `type` (GGUF/GGML block layout, kernels/cpu/quant_blocks.h).
struct DeviceWeights {
  TensorType type = TensorType::f32;
  int rows = 0;
  int cols = 0;
  const void* data = nullptr;
};

// Whether BF16 or F16 weights take the tensor cores (float_mma_kernel.cuh) at every token count:
// rows of whole 16-column mma steps at a 16-byte aligned address (cp.async copies 16 bytes).
// Others, F32 always, take gemv_kernel and gemm_kernel on CUDA cores, also at every token count,
// so that a matrix's row bits never depend on the batch.
TERN_HOST_DEVICE constexpr bool uses_float_mma(TensorType type, int cols, std::uintptr_t address) {
  return (type == TensorType::bf16 || type == TensorType::f16) && cols % 16 == 0 &&
         address % 16 == 0;
}
inline bool uses_float_mma(const DeviceWeights& w) {
  return uses_float_mma(w.type, w.cols, reinterpret_cast<std::uintptr_t>(w.data));
}

// The activations of a launch, row-major [tokens][cols]: Q8_1 blocks ([tokens][cols / 32], from
// launch_quantize_activations_q8_1) for Q8_0, Q4_0, Q4_K and Q6_K weights; for BF16 and F16
// weights that take the tensor cores (uses_float_mma), the values rounded to the weights' type
// (launch_round_activations), 16-byte aligned, with that type in `rounded_type`; f32 for the rest.
// Only the one the weights read must be set.
struct DeviceActivations {
  const float* f32 = nullptr;
  const BlockQ8_1* q8_1 = nullptr;
  const std::uint16_t* rounded = nullptr;
  TensorType rounded_type = TensorType::f32;
};

// One copy-on-write of a paged KV block: block src's contents go to block dst.
struct BlockCopy {
  std::int32_t src;
  std::int32_t dst;
};

// Pairs per launch: they travel as a kernel argument (8 bytes each, well inside CUDA's 4 KiB of
// kernel parameters), so the launcher needs no device staging buffer; more pairs take more
// launches.
inline constexpr int kMaxBlockCopiesPerLaunch = 128;

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
