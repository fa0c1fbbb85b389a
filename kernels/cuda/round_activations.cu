#include "kernels/cuda/round_activations.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/matmul_types.h"
#include "kernels/cuda/round_activations_kernel.cuh"

TERN_CUDA_NAMESPACE_BEGIN

cudaError_t launch_round_activations(const float* x, int tokens, int cols, TensorType type,
                                     std::uint16_t* out, cudaStream_t stream) {
  if ((type != TensorType::bf16 && type != TensorType::f16) || tokens < 0 || cols < 0 ||
      x == nullptr || out == nullptr || !aligned_to(x, alignof(float)) ||
      !aligned_to(out, alignof(std::uint16_t)))
    return cudaErrorInvalidValue;
  constexpr int kThreads = 256;
  const long long n = static_cast<long long>(tokens) * cols;
  if (n == 0) return cudaSuccess;
  const long long grid = (n + kThreads - 1) / kThreads;
  if (grid > 0x7fffffffLL) return cudaErrorInvalidValue;
  if (type == TensorType::bf16) {
    TERN_LAUNCH(round_activations_kernel<TensorType::bf16>, static_cast<unsigned>(grid), kThreads,
                0, stream, x, out, n);
  } else {
    TERN_LAUNCH(round_activations_kernel<TensorType::f16>, static_cast<unsigned>(grid), kThreads, 0,
                stream, x, out, n);
  }
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(round_activations,
                       TERN_KERNEL_ENTRY(round_activations_kernel<TensorType::bf16>),
                       TERN_KERNEL_ENTRY(round_activations_kernel<TensorType::f16>))

TERN_CUDA_NAMESPACE_END
