#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

// Grammar-constrained decoding on the device: sets to -inf, in place, the logits of the tokens
// a row's token mask disallows, so that the top-k and row-sum kernels that follow
// (logits_select.h, logit_row_sums.h) see the masked row, as the host's masking would leave it.
// `logits` is [rows][vocab]; mask m (of masked_rows) is masks[m * mask_words ...], one bit per
// token of the whole vocabulary (engine/grammar/token_mask.h: bit t % 64 of word t / 64 set =
// allowed), and applies to row mask_rows[m]. `mask_offset` is the vocabulary index of the rows'
// first column: 0, or a tensor-parallel rank's slice start, whose rows hold only its columns of
// the whole vocabulary. Rows no mask names are untouched; allowed logits keep their bits (NaN
// included); a row named twice gets both masks. An index in mask_rows outside [0, rows) writes
// nothing. Pointers are device memory.
//
// Returns cudaErrorInvalidValue without launching when rows < 0, vocab < 1, masked_rows < 0 or
// over 65535, mask_offset < 0, mask_words < (mask_offset + vocab + 63) / 64, a pointer is null
// (with masked_rows > 0), or the logits overlap the masks or mask_rows; cudaSuccess for
// masked_rows == 0; else the launch status.
cudaError_t launch_token_mask(float* logits, int rows, int vocab, const std::uint64_t* masks,
                              long long mask_words, long long mask_offset,
                              const std::int32_t* mask_rows, int masked_rows, cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
