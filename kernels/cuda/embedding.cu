#include "kernels/cuda/embedding.h"

#include "kernels/cuda/embedding_kernel.cuh"
#include "kernels/cuda/kernel_table.h"

namespace tern::kernels::cuda {
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
  switch (type) {
    case TensorType::f32:
      return launch_for<TensorType::f32>(table, vocab, hidden, token_ids, tokens, out, stream);
    case TensorType::f16:
      return launch_for<TensorType::f16>(table, vocab, hidden, token_ids, tokens, out, stream);
    case TensorType::bf16:
      return launch_for<TensorType::bf16>(table, vocab, hidden, token_ids, tokens, out, stream);
    case TensorType::q8_0:
      return launch_for<TensorType::q8_0>(table, vocab, hidden, token_ids, tokens, out, stream);
    case TensorType::q4_0:
      return launch_for<TensorType::q4_0>(table, vocab, hidden, token_ids, tokens, out, stream);
    case TensorType::q4_k:
      return launch_for<TensorType::q4_k>(table, vocab, hidden, token_ids, tokens, out, stream);
    case TensorType::q6_k:
      return launch_for<TensorType::q6_k>(table, vocab, hidden, token_ids, tokens, out, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

TERN_KERNEL_TABLE_PART(embedding, TERN_KERNEL_ENTRY(embedding_gather_kernel<TensorType::f32>),
                       TERN_KERNEL_ENTRY(embedding_gather_kernel<TensorType::f16>),
                       TERN_KERNEL_ENTRY(embedding_gather_kernel<TensorType::bf16>),
                       TERN_KERNEL_ENTRY(embedding_gather_kernel<TensorType::q8_0>),
                       TERN_KERNEL_ENTRY(embedding_gather_kernel<TensorType::q4_0>),
                       TERN_KERNEL_ENTRY(embedding_gather_kernel<TensorType::q4_k>),
                       TERN_KERNEL_ENTRY(embedding_gather_kernel<TensorType::q6_k>))

}  // namespace tern::kernels::cuda
