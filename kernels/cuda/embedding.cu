#include "kernels/cuda/embedding.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/embedding_kernel.cuh"
#include "kernels/cuda/kernel_table.h"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 256;
constexpr long long kMaxGridY = 65535;

template <TensorType kType>
cudaError_t launch_for(const void* table, long long vocab, int hidden,
                       const std::int32_t* token_ids, int tokens, float* out, cudaStream_t stream) {
  if (hidden % WeightFormat<kType>::kBlockElements != 0) return cudaErrorInvalidValue;
  const long long chunks = (static_cast<long long>(hidden) + kThreads - 1) / kThreads;
  if (chunks > kMaxGridY) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(chunks));
  TERN_LAUNCH(embedding_gather_kernel<kType>, grid, kThreads, 0, stream, table, vocab, hidden,
              token_ids, out);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_embedding_gather(TensorType type, const void* table, long long vocab, int hidden,
                                    const std::int32_t* token_ids, int tokens, float* out,
                                    cudaStream_t stream) {
  if (tokens < 0 || hidden <= 0 || vocab <= 0) return cudaErrorInvalidValue;
  return with_weight_format(type, cudaErrorInvalidValue, [&](auto format) {
    return launch_for<decltype(format)::value>(table, vocab, hidden, token_ids, tokens, out,
                                               stream);
  });
}

#define TERN_EMBEDDING_ENTRY(name) TERN_KERNEL_ENTRY(embedding_gather_kernel<TensorType::name>),
TERN_KERNEL_TABLE_PART(embedding, TERN_CUDA_WEIGHT_FORMATS(TERN_EMBEDDING_ENTRY))
#undef TERN_EMBEDDING_ENTRY

TERN_CUDA_NAMESPACE_END
