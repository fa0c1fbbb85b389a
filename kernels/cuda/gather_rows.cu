#include "kernels/cuda/gather_rows.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/gather_rows_kernel.cuh"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/launch_checks.h"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 256;
constexpr long long kMaxGridY = 65535;

}  // namespace

cudaError_t launch_gather_rows(const float* from, long long from_rows, long long from_stride,
                               const std::int32_t* row_index, int count, float* to,
                               long long to_stride, int width, cudaStream_t stream) {
  if (count < 0 || width < 1 || from_rows < 0 || from_stride < width || to_stride < width)
    return cudaErrorInvalidValue;
  const long long chunks = (static_cast<long long>(width) + kThreads - 1) / kThreads;
  if (chunks > kMaxGridY) return cudaErrorInvalidValue;
  const long long from_floats = strided_rows_floats(from_rows, from_stride, width);
  const long long to_floats = strided_rows_floats(count, to_stride, width);
  if (from_floats < 0 || to_floats < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const std::size_t to_bytes = sizeof(float) * static_cast<std::size_t>(to_floats);
  if (to == nullptr || row_index == nullptr || (from == nullptr && from_rows > 0) ||
      device_spans_overlap(to, to_bytes, from,
                           sizeof(float) * static_cast<std::size_t>(from_floats)) ||
      device_spans_overlap(to, to_bytes, row_index,
                           sizeof(std::int32_t) * static_cast<std::size_t>(count)))
    return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(count), static_cast<unsigned>(chunks));
  TERN_LAUNCH(gather_rows_kernel, grid, kThreads, 0, stream, from, from_rows, from_stride,
              row_index, to, to_stride, width);
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(gather_rows, TERN_KERNEL_ENTRY(gather_rows_kernel))

TERN_CUDA_NAMESPACE_END
