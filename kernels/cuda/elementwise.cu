#include "kernels/cuda/elementwise.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/elementwise_kernel.cuh"
#include "kernels/cuda/kernel_table.h"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 256;

unsigned int blocks_for(long long n) {
  return static_cast<unsigned int>((n + kThreads - 1) / kThreads);
}

}  // namespace

cudaError_t launch_silu_mul(const float* gate, const float* up, float* out, long long n,
                            cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  TERN_LAUNCH(silu_mul_kernel, blocks_for(n), kThreads, 0, stream, gate, up, out, n);
  return cudaGetLastError();
}

cudaError_t launch_add(float* into, const float* from, long long n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  TERN_LAUNCH(add_kernel, blocks_for(n), kThreads, 0, stream, into, from, n);
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(elementwise, TERN_KERNEL_ENTRY(silu_mul_kernel),
                       TERN_KERNEL_ENTRY(add_kernel))

TERN_CUDA_NAMESPACE_END
