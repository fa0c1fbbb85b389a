#include "kernels/cuda/logits_select.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/logits_select_kernel.cuh"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 256;
// 8 candidate slots per thread (16 KiB of shared memory): rows whose top k spread over more than
// 8 of a thread's strided elements are rare (long runs of equal values) and take the slow path.
constexpr int kSlots = 8;

}  // namespace

cudaError_t launch_argmax(const float* logits, int rows, int vocab, std::int32_t* indices,
                          cudaStream_t stream) {
  if (rows < 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  TERN_LAUNCH(argmax_kernel<kThreads>, rows, kThreads, 0, stream, logits, vocab, indices);
  return cudaGetLastError();
}

cudaError_t launch_top_k(const float* logits, int rows, int vocab, int k, float* values,
                         std::int32_t* indices, cudaStream_t stream) {
  if (rows < 0 || vocab <= 0 || k < 1 || k > kMaxTopK || k > vocab) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  TERN_LAUNCH((top_k_kernel<kThreads, kSlots>), rows, kThreads, 0, stream, logits, vocab, k, values,
              indices);
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(logits_select, TERN_KERNEL_ENTRY(argmax_kernel<kThreads>),
                       TERN_KERNEL_ENTRY((top_k_kernel<kThreads, kSlots>)))

TERN_CUDA_NAMESPACE_END
