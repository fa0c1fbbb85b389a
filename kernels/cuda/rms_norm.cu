#include "kernels/cuda/rms_norm.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/rms_norm_kernel.cuh"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kRowThreads = 256;
constexpr int kHeadThreads = 128;  // four heads per block
constexpr long long kMaxGridX = 2147483647;

}  // namespace

cudaError_t launch_rms_norm(const float* x, const float* weight, float* y, int rows, int cols,
                            float eps, cudaStream_t stream) {
  if (rows < 0 || cols < 1) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  if (x == nullptr || weight == nullptr || y == nullptr) return cudaErrorInvalidValue;
  TERN_LAUNCH(rms_norm_kernel<kRowThreads>, rows, kRowThreads, 0, stream, x, weight, y, cols, eps);
  return cudaGetLastError();
}

cudaError_t launch_rms_norm_residual(float* residual, const float* delta, const float* weight,
                                     float* y, int rows, int cols, float eps, cudaStream_t stream) {
  if (rows < 0 || cols < 1) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  if (residual == nullptr || delta == nullptr || weight == nullptr || y == nullptr || y == residual)
    return cudaErrorInvalidValue;
  TERN_LAUNCH(rms_norm_residual_kernel<kRowThreads>, rows, kRowThreads, 0, stream, residual, delta,
              weight, y, cols, eps);
  return cudaGetLastError();
}

cudaError_t launch_rms_norm_per_head(const float* x, const float* weight, float* y,
                                     long long tokens, long long row_stride, int n_heads,
                                     int head_dim, float eps, cudaStream_t stream) {
  if (tokens < 0 || tokens > kMaxGridX || n_heads < 1 || head_dim < 1 ||
      row_stride < static_cast<long long>(n_heads) * head_dim)
    return cudaErrorInvalidValue;
  constexpr int kHeadsPerBlock = kHeadThreads / 32;
  const long long heads = tokens * n_heads;
  const long long blocks = (heads + kHeadsPerBlock - 1) / kHeadsPerBlock;
  if (blocks > kMaxGridX) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  if (x == nullptr || weight == nullptr || y == nullptr) return cudaErrorInvalidValue;
  TERN_LAUNCH(rms_norm_per_head_kernel<kHeadThreads>, static_cast<unsigned>(blocks), kHeadThreads,
              0, stream, x, weight, y, row_stride, heads, n_heads, head_dim, eps);
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(rms_norm, TERN_KERNEL_ENTRY(rms_norm_kernel<kRowThreads>),
                       TERN_KERNEL_ENTRY(rms_norm_residual_kernel<kRowThreads>),
                       TERN_KERNEL_ENTRY(rms_norm_per_head_kernel<kHeadThreads>))

TERN_CUDA_NAMESPACE_END
