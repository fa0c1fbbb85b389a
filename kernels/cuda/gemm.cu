#include "kernels/cuda/gemm.h"

#include "kernels/cuda/gemm_kernel.cuh"
#include "kernels/cuda/kernel_table.h"

namespace tern::kernels::cuda {
namespace {

template <TensorType kType>
cudaError_t launch_gemm_as(const DeviceWeights& w, const DeviceActivations& x, int tokens, float* y,
                           cudaStream_t stream) {
  const dim3 grid((w.rows + kGemmRows - 1) / kGemmRows, (tokens + kGemmTokens - 1) / kGemmTokens);
  TERN_LAUNCH(gemm_kernel<kType>, grid, kGemmThreads, 0, stream,
              static_cast<const unsigned char*>(w.data), w.rows, w.cols, x.f32, x.q8_1, tokens, y);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_gemm(const DeviceWeights& w, const DeviceActivations& x, int tokens, float* y,
                        cudaStream_t stream) {
  if (const cudaError_t error = check_matmul_arguments(w, x, tokens, y); error != cudaSuccess)
    return error;
  if (tokens == 0) return cudaSuccess;
  if ((tokens + kGemmTokens - 1) / kGemmTokens > 65535) return cudaErrorInvalidValue;
  switch (w.type) {
    case TensorType::f32:
      return launch_gemm_as<TensorType::f32>(w, x, tokens, y, stream);
    case TensorType::f16:
      return launch_gemm_as<TensorType::f16>(w, x, tokens, y, stream);
    case TensorType::bf16:
      return launch_gemm_as<TensorType::bf16>(w, x, tokens, y, stream);
    case TensorType::q8_0:
      return launch_gemm_as<TensorType::q8_0>(w, x, tokens, y, stream);
    case TensorType::q4_0:
      return launch_gemm_as<TensorType::q4_0>(w, x, tokens, y, stream);
    case TensorType::q4_k:
      return launch_gemm_as<TensorType::q4_k>(w, x, tokens, y, stream);
    case TensorType::q6_k:
      return launch_gemm_as<TensorType::q6_k>(w, x, tokens, y, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

TERN_KERNEL_TABLE_PART(gemm, TERN_KERNEL_ENTRY(gemm_kernel<TensorType::f32>),
                       TERN_KERNEL_ENTRY(gemm_kernel<TensorType::f16>),
                       TERN_KERNEL_ENTRY(gemm_kernel<TensorType::bf16>),
                       TERN_KERNEL_ENTRY(gemm_kernel<TensorType::q8_0>),
                       TERN_KERNEL_ENTRY(gemm_kernel<TensorType::q4_0>),
                       TERN_KERNEL_ENTRY(gemm_kernel<TensorType::q4_k>),
                       TERN_KERNEL_ENTRY(gemm_kernel<TensorType::q6_k>))

}  // namespace tern::kernels::cuda
