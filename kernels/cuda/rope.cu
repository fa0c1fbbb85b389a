#include "kernels/cuda/rope.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/rope_kernel.cuh"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 128;

}  // namespace

cudaError_t launch_rope(float* x, long long tokens, long long row_stride, int n_heads, int head_dim,
                        const std::int32_t* positions, const float* inverse_frequencies, int pairs,
                        RopeLayout layout, cudaStream_t stream) {
  constexpr long long kMaxGridX = 2147483647;
  constexpr long long kMaxGridY = 65535;
  if (tokens < 0 || tokens > kMaxGridX || n_heads < 1 || head_dim < 1 || pairs < 1 ||
      pairs > kMaxRopePairs || 2 * pairs > head_dim ||
      row_stride < static_cast<long long>(n_heads) * head_dim)
    return cudaErrorInvalidValue;
  const long long items = static_cast<long long>(n_heads) * pairs;
  const long long chunks = (items + kThreads - 1) / kThreads;
  if (chunks > kMaxGridY) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  if (x == nullptr || positions == nullptr || inverse_frequencies == nullptr)
    return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(chunks));
  const auto shared_bytes = static_cast<unsigned>(2 * pairs * sizeof(float));
  TERN_LAUNCH(rope_kernel<kThreads>, grid, kThreads, shared_bytes, stream, x, row_stride, n_heads,
              head_dim, positions, inverse_frequencies, pairs, layout == RopeLayout::neox);
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(rope, TERN_KERNEL_ENTRY(rope_kernel<kThreads>))

TERN_CUDA_NAMESPACE_END
