#include "kernels/cuda/sum_ranks.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/launch_checks.h"
#include "kernels/cuda/sum_ranks_kernel.cuh"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; larger counts loop in the kernel.
constexpr long long kMaxBlocks = 4096;

}  // namespace

cudaError_t launch_sum_ranks(const float* gathered, int ranks, long long count, float* out,
                             cudaStream_t stream) {
  if (ranks < 1 || count < 0 || count > kMaxDeviceFloats / ranks) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const auto gathered_bytes = sizeof(float) * static_cast<std::size_t>(ranks * count);
  const auto out_bytes = sizeof(float) * static_cast<std::size_t>(count);
  if (gathered == nullptr || out == nullptr ||
      device_spans_overlap(gathered, gathered_bytes, out, out_bytes))
    return cudaErrorInvalidValue;
  const long long wanted = (count + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(wanted < kMaxBlocks ? wanted : kMaxBlocks);
  TERN_LAUNCH(sum_ranks_kernel, blocks, kThreads, 0, stream, gathered, ranks, count, out);
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(sum_ranks, TERN_KERNEL_ENTRY(sum_ranks_kernel))

TERN_CUDA_NAMESPACE_END
