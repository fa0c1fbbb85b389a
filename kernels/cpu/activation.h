#pragma once

#include <cstdint>

namespace tern::kernels {

// SwiGLU's elementwise half: out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + e^-g). out may
// alias gate (or up). Every element is computed by the same arithmetic wherever it sits in the
// array, so results do not depend on n or on how rows are batched.
void silu_mul(const float* gate, const float* up, float* out, std::int64_t n);

// The instruction-set variants silu_mul dispatches to, for tests and benchmarks. The AVX2 one
// needs AVX2+FMA+F16C, the AVX-512 one CpuFeatures::has_avx512().
void silu_mul_scalar(const float* gate, const float* up, float* out, std::int64_t n);
void silu_mul_avx2(const float* gate, const float* up, float* out, std::int64_t n);
void silu_mul_avx512(const float* gate, const float* up, float* out, std::int64_t n);

}  // namespace tern::kernels
