#include "kernels/cuda/gemv.h"

#include <cstdint>

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/float_mma_kernel.cuh"
#include "kernels/cuda/gemv_kernel.cuh"
#include "kernels/cuda/gemv_staged_kernel.cuh"
#include "kernels/cuda/kernel_table.h"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

template <TensorType kType, int kTokens>
cudaError_t launch_gemv_tokens(const DeviceWeights& w, const DeviceActivations& x, int tokens,
                               float* y, cudaStream_t stream) {
  if constexpr (gemv_stages_format(kType)) {
    if (gemv_stages_rows(kType, w.cols, reinterpret_cast<std::uintptr_t>(w.data))) {
      const dim3 grid((w.rows + kGemvStagedWarps - 1) / kGemvStagedWarps,
                      (tokens + kTokens - 1) / kTokens);
      TERN_LAUNCH((gemv_staged_kernel<kType, kTokens>), grid, 32 * kGemvStagedWarps, 0, stream,
                  static_cast<const unsigned char*>(w.data), w.rows, w.cols, x.q8_1, tokens, y);
      return cudaGetLastError();
    }
  }
  const dim3 grid((w.rows + kGemvWarps - 1) / kGemvWarps, (tokens + kTokens - 1) / kTokens);
  TERN_LAUNCH((gemv_kernel<kType, kTokens>), grid, 32 * kGemvWarps, 0, stream,
              static_cast<const unsigned char*>(w.data), w.rows, w.cols, x.f32, x.q8_1, tokens, y);
  return cudaGetLastError();
}

// The narrowest kernel that takes all tokens in one thread block (registers for as many
// partial sums as tokens); beyond 8 tokens, blocks of 8. The bits do not depend on the choice.
template <TensorType kType>
cudaError_t launch_gemv_as(const DeviceWeights& w, const DeviceActivations& x, int tokens, float* y,
                           cudaStream_t stream) {
  if constexpr (kType == TensorType::bf16 || kType == TensorType::f16) {
    if (uses_float_mma(w))
      return launch_float_mma<kType, FloatMmaDecodeTile>(w, x, tokens, y, stream);
  }
  if (tokens == 1) return launch_gemv_tokens<kType, 1>(w, x, tokens, y, stream);
  if (tokens == 2) return launch_gemv_tokens<kType, 2>(w, x, tokens, y, stream);
  if (tokens <= 4) return launch_gemv_tokens<kType, 4>(w, x, tokens, y, stream);
  return launch_gemv_tokens<kType, kGemvMaxTokens>(w, x, tokens, y, stream);
}

}  // namespace

cudaError_t launch_gemv(const DeviceWeights& w, const DeviceActivations& x, int tokens, float* y,
                        cudaStream_t stream) {
  if (const cudaError_t error = check_matmul_arguments(w, x, tokens, y); error != cudaSuccess)
    return error;
  if (tokens == 0) return cudaSuccess;
  if ((tokens + kGemvMaxTokens - 1) / kGemvMaxTokens > 65535) return cudaErrorInvalidValue;
  return with_weight_format(w.type, cudaErrorInvalidValue, [&](auto format) {
    return launch_gemv_as<decltype(format)::value>(w, x, tokens, y, stream);
  });
}

#define TERN_GEMV_ENTRIES(name)                              \
  TERN_KERNEL_ENTRY((gemv_kernel<TensorType::name, 1>)),     \
      TERN_KERNEL_ENTRY((gemv_kernel<TensorType::name, 2>)), \
      TERN_KERNEL_ENTRY((gemv_kernel<TensorType::name, 4>)), \
      TERN_KERNEL_ENTRY((gemv_kernel<TensorType::name, kGemvMaxTokens>)),
#define TERN_GEMV_STAGED_ENTRIES(name)                              \
  TERN_KERNEL_ENTRY((gemv_staged_kernel<TensorType::name, 1>)),     \
      TERN_KERNEL_ENTRY((gemv_staged_kernel<TensorType::name, 2>)), \
      TERN_KERNEL_ENTRY((gemv_staged_kernel<TensorType::name, 4>)), \
      TERN_KERNEL_ENTRY((gemv_staged_kernel<TensorType::name, kGemvMaxTokens>)),
TERN_KERNEL_TABLE_PART(gemv,
                       TERN_CUDA_WEIGHT_FORMATS(TERN_GEMV_ENTRIES) TERN_GEMV_STAGED_ENTRIES(q8_0)
                           TERN_GEMV_STAGED_ENTRIES(q4_0) TERN_KERNEL_ENTRY(
                               (float_mma_kernel<TensorType::bf16, FloatMmaDecodeTile>)),
                       TERN_KERNEL_ENTRY((float_mma_kernel<TensorType::f16, FloatMmaDecodeTile>)))
#undef TERN_GEMV_STAGED_ENTRIES
#undef TERN_GEMV_ENTRIES

TERN_CUDA_NAMESPACE_END
