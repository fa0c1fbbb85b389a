#include "kernels/cuda/rms_norm.h"

#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/rms_norm_kernel.cuh"

namespace tern::kernels::cuda {

constexpr int kRmsNormThreads = 256;

cudaError_t launch_rms_norm(const float* x, const float* weight, float* y, int rows, int cols,
                            float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  TERN_LAUNCH(rms_norm_kernel<kRmsNormThreads>, rows, kRmsNormThreads, 0, stream, x, weight, y,
              cols, eps);
  return cudaGetLastError();
}

TERN_KERNEL_TABLE_PART(rms_norm, TERN_KERNEL_ENTRY(rms_norm_kernel<kRmsNormThreads>))

}  // namespace tern::kernels::cuda
