#pragma once

#include <cstdint>

namespace tern::kernels {

// In-place softmax over x[0, n): subtracts the maximum first, so large logits do not overflow.
// n must be at least 1.
void softmax(float* x, std::int64_t n);

// The instruction-set variants softmax dispatches to, for tests and benchmarks. The AVX2 one needs
// AVX2+FMA+F16C, the AVX-512 one CpuFeatures::has_avx512().
void softmax_scalar(float* x, std::int64_t n);
void softmax_avx2(float* x, std::int64_t n);
void softmax_avx512(float* x, std::int64_t n);

}  // namespace tern::kernels
