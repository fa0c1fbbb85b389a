#pragma once

#include <cstdint>

namespace tern::kernels {

// RMSNorm per row: y = x / sqrt(mean(x^2) + eps) * weight. x and y are [rows][cols] (contiguous);
// y may alias x. Each row's result depends only on that row, never on `rows`.
void rms_norm(const float* x, const float* weight, float* y, std::int64_t rows, std::int64_t cols,
              float eps);

// The instruction-set variants rms_norm dispatches to, for tests and benchmarks. The AVX2 one
// needs AVX2+FMA+F16C, the AVX-512 one CpuFeatures::has_avx512().
void rms_norm_scalar(const float* x, const float* weight, float* y, std::int64_t rows,
                     std::int64_t cols, float eps);
void rms_norm_avx2(const float* x, const float* weight, float* y, std::int64_t rows,
                   std::int64_t cols, float eps);
void rms_norm_avx512(const float* x, const float* weight, float* y, std::int64_t rows,
                     std::int64_t cols, float eps);

}  // namespace tern::kernels
