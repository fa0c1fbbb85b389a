#include "kernels/cpu/activation.h"

#include <cmath>

#include "kernels/cpu/cpu_features.h"

namespace tern::kernels {
namespace {

using SiluMulFunction = void (*)(const float*, const float*, float*, std::int64_t);

SiluMulFunction select_silu_mul() {
  const CpuFeatures& features = cpu_features();
  if (features.has_avx512()) return silu_mul_avx512;
  if (features.avx2 && features.fma && features.f16c) return silu_mul_avx2;
  return silu_mul_scalar;
}

}  // namespace

void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  static const SiluMulFunction function = select_silu_mul();
  function(gate, up, out, n);
}

void silu_mul_scalar(const float* gate, const float* up, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

}  // namespace tern::kernels
