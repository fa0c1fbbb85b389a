#include "kernels/cuda/gemm.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/float_mma_kernel.cuh"
#include "kernels/cuda/gemm_kernel.cuh"
#include "kernels/cuda/gemm_mma_kernel.cuh"
#include "kernels/cuda/kernel_table.h"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

// Integer formats on tensor cores, BF16 and F16 on them where uses_float_mma holds, the rest on
// CUDA cores.
template <TensorType kType>
cudaError_t launch_gemm_as(const DeviceWeights& w, const DeviceActivations& x, int tokens, float* y,
                           cudaStream_t stream) {
  if constexpr (kType == TensorType::bf16 || kType == TensorType::f16) {
    if (uses_float_mma(w))
      return launch_float_mma<kType, FloatMmaPrefillTile>(w, x, tokens, y, stream);
  }
  if constexpr (reads_q8_1_activations(kType)) {
    const dim3 grid((w.rows + kMmaRows - 1) / kMmaRows, (tokens + kMmaTokens - 1) / kMmaTokens);
    TERN_LAUNCH(gemm_mma_kernel<kType>, grid, kMmaThreads, 0, stream,
                static_cast<const unsigned char*>(w.data), w.rows, w.cols, x.q8_1, tokens, y);
  } else {
    const dim3 grid((w.rows + kGemmRows - 1) / kGemmRows, (tokens + kGemmTokens - 1) / kGemmTokens);
    TERN_LAUNCH(gemm_kernel<kType>, grid, kGemmThreads, 0, stream,
                static_cast<const unsigned char*>(w.data), w.rows, w.cols, x.f32, tokens, y);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_gemm(const DeviceWeights& w, const DeviceActivations& x, int tokens, float* y,
                        cudaStream_t stream) {
  if (const cudaError_t error = check_matmul_arguments(w, x, tokens, y); error != cudaSuccess)
    return error;
  if (tokens == 0) return cudaSuccess;
  if ((tokens + kGemmTokens - 1) / kGemmTokens > 65535) return cudaErrorInvalidValue;
  return with_weight_format(w.type, cudaErrorInvalidValue, [&](auto format) {
    return launch_gemm_as<decltype(format)::value>(w, x, tokens, y, stream);
  });
}

TERN_KERNEL_TABLE_PART(gemm, TERN_KERNEL_ENTRY(gemm_kernel<TensorType::f32>),
                       TERN_KERNEL_ENTRY(gemm_kernel<TensorType::f16>),
                       TERN_KERNEL_ENTRY(gemm_kernel<TensorType::bf16>),
                       TERN_KERNEL_ENTRY(gemm_mma_kernel<TensorType::q8_0>),
                       TERN_KERNEL_ENTRY(gemm_mma_kernel<TensorType::q4_0>),
                       TERN_KERNEL_ENTRY(gemm_mma_kernel<TensorType::q4_k>),
                       TERN_KERNEL_ENTRY(gemm_mma_kernel<TensorType::q6_k>),
                       TERN_KERNEL_ENTRY((float_mma_kernel<TensorType::bf16, FloatMmaPrefillTile>)),
                       TERN_KERNEL_ENTRY((float_mma_kernel<TensorType::f16, FloatMmaPrefillTile>)))

TERN_CUDA_NAMESPACE_END
