#include "kernels/cuda/token_mask.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/launch_checks.h"
#include "kernels/cuda/token_mask_kernel.cuh"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 256;
constexpr int kMaxGridY = 65535;
// A mask word count past this is a bad argument, not memory (2^40 bits of vocabulary).
constexpr long long kMaxMaskWords = 1LL << 34;

}  // namespace

cudaError_t launch_token_mask(float* logits, int rows, int vocab, const std::uint64_t* masks,
                              long long mask_words, long long mask_offset,
                              const std::int32_t* mask_rows, int masked_rows, cudaStream_t stream) {
  if (rows < 0 || vocab < 1 || masked_rows < 0 || masked_rows > kMaxGridY || mask_offset < 0 ||
      mask_offset > kMaxMaskWords * 64 || mask_words > kMaxMaskWords ||
      mask_words < (mask_offset + vocab + 63) / 64)
    return cudaErrorInvalidValue;
  if (masked_rows == 0) return cudaSuccess;
  if (logits == nullptr || masks == nullptr || mask_rows == nullptr) return cudaErrorInvalidValue;
  const std::size_t logit_bytes =
      sizeof(float) * static_cast<std::size_t>(rows) * static_cast<std::size_t>(vocab);
  const std::size_t mask_bytes = sizeof(std::uint64_t) * static_cast<std::size_t>(masked_rows) *
                                 static_cast<std::size_t>(mask_words);
  if (device_spans_overlap(logits, logit_bytes, masks, mask_bytes) ||
      device_spans_overlap(logits, logit_bytes, mask_rows,
                           sizeof(std::int32_t) * static_cast<std::size_t>(masked_rows)))
    return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>((vocab + kThreads - 1) / kThreads),
                  static_cast<unsigned>(masked_rows));
  TERN_LAUNCH(token_mask_kernel, grid, kThreads, 0, stream, logits, rows, vocab, masks, mask_words,
              mask_offset, mask_rows);
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(token_mask, TERN_KERNEL_ENTRY(token_mask_kernel))

TERN_CUDA_NAMESPACE_END
