#include "kernels/cuda/copy_blocks.h"

#include "kernels/cuda/copy_blocks_kernel.cuh"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 256;
constexpr int kMaxGridZ = 65535;
// Blocks of threads per copied block: enough to spread a 32 KiB block over 8 SMs' worth of
// threads; larger blocks stride.
constexpr unsigned long long kMaxChunks = 64;

bool valid_pairs(const BlockCopy* pairs, int count, int blocks_per_pool) {
  for (int i = 0; i < count; ++i) {
    const BlockCopy& pair = pairs[i];
    if (pair.src < 0 || pair.src >= blocks_per_pool || pair.dst < 0 ||
        pair.dst >= blocks_per_pool || pair.src == pair.dst)
      return false;
    // A handful of pairs per step: the quadratic scan allocates nothing.
    for (int j = 0; j < count; ++j) {
      if (j != i && (pairs[j].dst == pair.dst || pairs[j].src == pair.dst)) return false;
    }
  }
  return true;
}

}  // namespace

cudaError_t launch_copy_blocks(void* const* k_pools, void* const* v_pools, int layers,
                               std::size_t block_bytes, int blocks_per_pool, const BlockCopy* pairs,
                               int count, cudaStream_t stream) {
  if (layers < 0 || blocks_per_pool < 0 || count < 0 || layers > kMaxGridZ / 2 ||
      (pairs == nullptr && count > 0) || !valid_pairs(pairs, count, blocks_per_pool))
    return cudaErrorInvalidValue;
  if (layers == 0 || count == 0 || block_bytes == 0) return cudaSuccess;
  const unsigned long long per_chunk = 16ull * kThreads;
  const unsigned long long chunks = (block_bytes + per_chunk - 1) / per_chunk;
  for (int first = 0; first < count; first += kMaxBlockCopiesPerLaunch) {
    const int batch_count =
        count - first < kMaxBlockCopiesPerLaunch ? count - first : kMaxBlockCopiesPerLaunch;
    BlockCopyBatch batch{};
    for (int i = 0; i < batch_count; ++i) batch.pairs[i] = pairs[first + i];
    const dim3 grid(static_cast<unsigned>(chunks < kMaxChunks ? chunks : kMaxChunks),
                    static_cast<unsigned>(batch_count), static_cast<unsigned>(2 * layers));
    TERN_LAUNCH(copy_blocks_kernel<kThreads>, grid, kThreads, 0, stream, k_pools, v_pools,
                static_cast<unsigned long long>(block_bytes), batch);
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

TERN_KERNEL_TABLE_PART(copy_blocks, TERN_KERNEL_ENTRY(copy_blocks_kernel<kThreads>))

TERN_CUDA_NAMESPACE_END
