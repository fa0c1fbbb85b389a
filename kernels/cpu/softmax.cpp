#include "kernels/cpu/softmax.h"

#include <cmath>

#include "kernels/cpu/cpu_features.h"

namespace tern::kernels {
namespace {

using SoftmaxFunction = void (*)(float*, std::int64_t);

SoftmaxFunction select_softmax() {
  const CpuFeatures& features = cpu_features();
  if (features.has_avx512()) return softmax_avx512;
  if (features.avx2 && features.fma && features.f16c) return softmax_avx2;
  return softmax_scalar;
}

}  // namespace

void softmax(float* x, std::int64_t n) {
  static const SoftmaxFunction function = select_softmax();
  function(x, n);
}

void softmax_scalar(float* x, std::int64_t n) {
  float maximum = x[0];
  for (std::int64_t i = 1; i < n; ++i) maximum = x[i] > maximum ? x[i] : maximum;
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = expf(x[i] - maximum);
    sum += x[i];
  }
  const auto inverse_sum = static_cast<float>(1.0 / sum);
  for (std::int64_t i = 0; i < n; ++i) x[i] *= inverse_sum;
}

}  // namespace tern::kernels
