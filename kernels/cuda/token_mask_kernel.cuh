#pragma once

// Grammar-constrained decoding's token masks applied to logits rows on the device, before the
// rows' top candidates and sums are taken (engine/grammar/token_mask.h), shared source: nvcc
// compiles it through token_mask.cu, the host compiler against the SIMT emulator (docs/gpu.md)
// in tests/cuda_kernels/token_mask_test.cpp.

#include <cstdint>

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// One thread per logit: blockIdx.x is the chunk of blockDim.x tokens of a row, blockIdx.y the
// mask. Mask m applies to row mask_rows[m] of [rows][vocab] logits: token i is allowed when bit
// (mask_offset + i) % 64 of word (mask_offset + i) / 64 of masks[m] is set, and a disallowed
// token's logit becomes -inf; allowed ones keep their bits. A row index outside [0, rows) writes
// nothing. The 32 threads of a warp read the same one or two mask words.
__global__ void token_mask_kernel(float* __restrict__ logits, int rows, int vocab,
                                  const std::uint64_t* __restrict__ masks, long long mask_words,
                                  long long mask_offset,
                                  const std::int32_t* __restrict__ mask_rows) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= vocab) return;
  const std::int32_t row = mask_rows[blockIdx.y];
  if (row < 0 || row >= rows) return;
  const long long bit = mask_offset + i;
  const std::uint64_t word = masks[static_cast<long long>(blockIdx.y) * mask_words + bit / 64];
  if (((word >> (bit % 64)) & 1u) == 0) logits[static_cast<long long>(row) * vocab + i] = -INFINITY;
}

TERN_CUDA_NAMESPACE_END
