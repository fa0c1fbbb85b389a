#include "kernels/cuda/gemm.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/gemm_kernel.cuh"
#include "kernels/cuda/kernel_table.h"

TERN_CUDA_NAMESPACE_BEGIN
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
  return with_weight_format(w.type, cudaErrorInvalidValue, [&](auto format) {
    return launch_gemm_as<decltype(format)::value>(w, x, tokens, y, stream);
  });
}

#define TERN_GEMM_ENTRY(name) TERN_KERNEL_ENTRY(gemm_kernel<TensorType::name>),
TERN_KERNEL_TABLE_PART(gemm, TERN_CUDA_WEIGHT_FORMATS(TERN_GEMM_ENTRY))
#undef TERN_GEMM_ENTRY

TERN_CUDA_NAMESPACE_END
