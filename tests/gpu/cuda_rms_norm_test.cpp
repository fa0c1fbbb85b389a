// GPU kernel checks against a CPU reference of the same math. Skips without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda/rms_norm.h"

namespace tern::kernels::cuda {
namespace {

bool has_cuda_device() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return ok;
}

void reference_rms_norm(const std::vector<float>& x, const std::vector<float>& weight,
                        std::vector<float>& y, int rows, int cols, float eps) {
  for (int r = 0; r < rows; ++r) {
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += double(x[r * cols + c]) * x[r * cols + c];
    const double scale = 1.0 / std::sqrt(sum / cols + eps);
    for (int c = 0; c < cols; ++c) y[r * cols + c] = float(x[r * cols + c] * scale * weight[c]);
  }
}

TEST(CudaRmsNorm, MatchesCpuReference) {
  if (!has_cuda_device()) GTEST_SKIP() << "no CUDA device found";
  const int rows = 37, cols = 2048;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(rows * cols), weight(cols), expected(rows * cols), actual(rows * cols);
  for (float& v : x) v = normal(rng);
  for (float& v : weight) v = 1.0f + 0.1f * normal(rng);
  reference_rms_norm(x, weight, expected, rows, cols, 1e-5f);

  void *dx_raw = nullptr, *dw_raw = nullptr, *dy_raw = nullptr;
  ASSERT_EQ(cudaMalloc(&dx_raw, x.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dw_raw, weight.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy_raw, actual.size() * sizeof(float)), cudaSuccess);
  auto* dx = static_cast<float*>(dx_raw);
  auto* dw = static_cast<float*>(dw_raw);
  auto* dy = static_cast<float*>(dy_raw);
  cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dw, weight.data(), weight.size() * sizeof(float), cudaMemcpyHostToDevice);
  ASSERT_EQ(launch_rms_norm(dx, dw, dy, rows, cols, 1e-5f, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(actual.data(), dy, actual.size() * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dy);
  for (std::size_t i = 0; i < actual.size(); ++i) ASSERT_NEAR(actual[i], expected[i], 1e-4f) << i;
}

}  // namespace
}  // namespace tern::kernels::cuda
