#include "kernels/cuda/rms_norm.h"

#include "kernels/cuda/rms_norm_kernel.cuh"

namespace tern::kernels::cuda {

cudaError_t launch_rms_norm(const float* x, const float* weight, float* y, int rows, int cols,
                            float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  TERN_LAUNCH(rms_norm_kernel<kThreads>, rows, kThreads, 0, stream, x, weight, y, cols, eps);
  return cudaGetLastError();
}

}  // namespace tern::kernels::cuda
