#include "kernels/cpu/rms_norm.h"

#include <cmath>

#include "kernels/cpu/cpu_features.h"

namespace tern::kernels {
namespace {

using RmsNormFunction = void (*)(const float*, const float*, float*, std::int64_t, std::int64_t,
                                 float);

RmsNormFunction select_rms_norm() {
  const CpuFeatures& features = cpu_features();
  if (features.has_avx512()) return rms_norm_avx512;
  if (features.avx2 && features.fma && features.f16c) return rms_norm_avx2;
  return rms_norm_scalar;
}

}  // namespace

void rms_norm(const float* x, const float* weight, float* y, std::int64_t rows, std::int64_t cols,
              float eps) {
  static const RmsNormFunction function = select_rms_norm();
  function(x, weight, y, rows, cols, eps);
}

void rms_norm_scalar(const float* x, const float* weight, float* y, std::int64_t rows,
                     std::int64_t cols, float eps) {
  for (std::int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * cols;
    float* out = y + row * cols;
    // A serial float sum would lose digits over thousands of columns; the scalar path can afford
    // double.
    double sum_of_squares = 0;
    for (std::int64_t i = 0; i < cols; ++i) sum_of_squares += static_cast<double>(in[i]) * in[i];
    const float inverse_rms =
        static_cast<float>(1.0 / std::sqrt(sum_of_squares / static_cast<double>(cols) + eps));
    for (std::int64_t i = 0; i < cols; ++i) out[i] = in[i] * inverse_rms * weight[i];
  }
}

}  // namespace tern::kernels
