#include "kernels/cuda/quantize_q8_1.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/quantize_q8_1_kernel.cuh"

TERN_CUDA_NAMESPACE_BEGIN

cudaError_t launch_quantize_activations_q8_1(const float* x, int tokens, int cols, BlockQ8_1* out,
                                             cudaStream_t stream) {
  if (tokens < 0 || cols <= 0 || cols % kQ8_1Block != 0 || x == nullptr || out == nullptr ||
      !aligned_to(x, alignof(float)) || !aligned_to(out, alignof(BlockQ8_1)))
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  constexpr int kThreads = 256;  // eight blocks of 32 values per thread block
  const long long blocks = static_cast<long long>(tokens) * (cols / kQ8_1Block);
  const long long grid = (blocks + kThreads / 32 - 1) / (kThreads / 32);
  if (grid > 0x7fffffffLL) return cudaErrorInvalidValue;
  TERN_LAUNCH(quantize_q8_1_kernel, static_cast<unsigned>(grid), kThreads, 0, stream, x, out,
              blocks);
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(quantize_q8_1, TERN_KERNEL_ENTRY(quantize_q8_1_kernel))

TERN_CUDA_NAMESPACE_END
