#include "kernels/cuda/kv_store.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/kv_store_kernel.cuh"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 256;

template <class T>
cudaError_t launch_typed(const float* k, long long k_stride, const float* v, long long v_stride,
                         long long tokens, const std::int32_t* slots, const KvCacheLayout& layout,
                         long long slots_in_pool, void* k_pool, void* v_pool, cudaStream_t stream) {
  const int threads = layout.head_dim < kThreads ? (layout.head_dim + 31) / 32 * 32 : kThreads;
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(layout.n_kv_heads));
  TERN_LAUNCH(store_kv_kernel<T>, grid, threads, 0, stream, k, k_stride, v, v_stride, slots,
              slots_in_pool, layout.block_size, layout.head_dim, static_cast<T*>(k_pool),
              static_cast<T*>(v_pool));
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_store_kv(const float* k, long long k_stride, const float* v, long long v_stride,
                            long long tokens, const std::int32_t* slots,
                            const KvCacheLayout& layout, std::int32_t num_blocks, void* k_pool,
                            void* v_pool, cudaStream_t stream) {
  constexpr long long kMaxGridX = 2147483647;
  constexpr int kMaxGridY = 65535;
  if (tokens < 0 || tokens > kMaxGridX || layout.block_size < 1 || layout.n_kv_heads < 1 ||
      layout.n_kv_heads > kMaxGridY || layout.head_dim < 1 || num_blocks < 0)
    return cudaErrorInvalidValue;
  const long long width = static_cast<long long>(layout.n_kv_heads) * layout.head_dim;
  if (k_stride < width || v_stride < width) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  if (k == nullptr || v == nullptr || slots == nullptr || k_pool == nullptr || v_pool == nullptr)
    return cudaErrorInvalidValue;
  const long long slots_in_pool = static_cast<long long>(num_blocks) * layout.block_size;
  switch (layout.type) {
    case KvType::f32:
      return launch_typed<float>(k, k_stride, v, v_stride, tokens, slots, layout, slots_in_pool,
                                 k_pool, v_pool, stream);
    case KvType::f16:
      return launch_typed<__half>(k, k_stride, v, v_stride, tokens, slots, layout, slots_in_pool,
                                  k_pool, v_pool, stream);
    case KvType::bf16:
      return launch_typed<__nv_bfloat16>(k, k_stride, v, v_stride, tokens, slots, layout,
                                         slots_in_pool, k_pool, v_pool, stream);
  }
  return cudaErrorInvalidValue;
}

TERN_KERNEL_TABLE_PART(kv_store, TERN_KERNEL_ENTRY(store_kv_kernel<float>),
                       TERN_KERNEL_ENTRY(store_kv_kernel<__half>),
                       TERN_KERNEL_ENTRY(store_kv_kernel<__nv_bfloat16>))

TERN_CUDA_NAMESPACE_END
