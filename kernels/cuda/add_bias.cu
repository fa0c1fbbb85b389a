#include "kernels/cuda/add_bias.h"

#include "kernels/cuda/add_bias_kernel.cuh"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/launch_checks.h"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 256;
constexpr long long kMaxGridX = 2147483647;
constexpr long long kMaxGridY = 65535;

}  // namespace

cudaError_t launch_add_bias(float* rows, long long row_stride, long long tokens, const float* bias,
                            int width, cudaStream_t stream) {
  if (tokens < 0 || tokens > kMaxGridX || width < 1 || row_stride < width)
    return cudaErrorInvalidValue;
  const long long chunks = (static_cast<long long>(width) + kThreads - 1) / kThreads;
  if (chunks > kMaxGridY) return cudaErrorInvalidValue;
  const long long row_floats = strided_rows_floats(tokens, row_stride, width);
  if (row_floats < 0) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  if (rows == nullptr || bias == nullptr ||
      device_spans_overlap(rows, sizeof(float) * static_cast<std::size_t>(row_floats), bias,
                           sizeof(float) * static_cast<std::size_t>(width)))
    return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(chunks));
  TERN_LAUNCH(add_bias_kernel, grid, kThreads, 0, stream, rows, row_stride, bias, width);
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(add_bias, TERN_KERNEL_ENTRY(add_bias_kernel))

TERN_CUDA_NAMESPACE_END
