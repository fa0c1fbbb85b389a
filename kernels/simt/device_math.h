#pragma once

// The CUDA device types and math intrinsics for kernel source compiled by the host compiler
// against the emulator: __half and __nv_bfloat16 (cuda_fp16.h, cuda_bf16.h), the vector types
// (float2, float4, int4, ...), __dp4a, __ldg, and the fast-math intrinsics with the semantics
// the CUDA programming guide documents. Included through kernels/simt/builtins.h.

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/half.h"

// --- half precision -----------------------------------------------------------------------------
// Arithmetic goes through float and rounds once to the narrow type: for +, -, * and / that is
// the correctly rounded result a GPU's half instructions give (float's 24 bits >= 2 * 11 + 2).

struct __half {
  std::uint16_t bits = 0;
  __half() = default;
  __half(float value) : bits(::tern::kernels::f32_to_f16(value)) {}  // NOLINT: CUDA's implicit
  operator float() const { return ::tern::kernels::f16_to_f32(bits); }
};

struct __nv_bfloat16 {
  std::uint16_t bits = 0;
  __nv_bfloat16() = default;
  __nv_bfloat16(float value) : bits(::tern::kernels::f32_to_bf16(value)) {}  // NOLINT
  operator float() const { return ::tern::kernels::bf16_to_f32(bits); }
};

struct __half2 {
  __half x, y;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};

inline __half __float2half(float value) {
  return __half(value);
}
inline __half __float2half_rn(float value) {
  return __half(value);
}
inline float __half2float(__half value) {
  return static_cast<float>(value);
}
inline __nv_bfloat16 __float2bfloat16(float value) {
  return __nv_bfloat16(value);
}
inline __nv_bfloat16 __float2bfloat16_rn(float value) {
  return __nv_bfloat16(value);
}
inline float __bfloat162float(__nv_bfloat16 value) {
  return static_cast<float>(value);
}
inline __half __ushort_as_half(unsigned short bits) {
  __half h;
  h.bits = bits;
  return h;
}
inline unsigned short __half_as_ushort(__half value) {
  return value.bits;
}
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) {
  __nv_bfloat16 h;
  h.bits = bits;
  return h;
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 value) {
  return value.bits;
}
inline __half2 __floats2half2_rn(float a, float b) {
  return {__half(a), __half(b)};
}

#define TERN_SIMT_NARROW_OPERATORS(T) \
  inline T operator+(T a, T b) {      \
    return T(float(a) + float(b));    \
  }                                   \
  inline T operator-(T a, T b) {      \
    return T(float(a) - float(b));    \
  }                                   \
  inline T operator*(T a, T b) {      \
    return T(float(a) * float(b));    \
  }                                   \
  inline T operator/(T a, T b) {      \
    return T(float(a) / float(b));    \
  }                                   \
  inline T operator-(T a) {           \
    T r = a;                          \
    r.bits ^= 0x8000u;                \
    return r;                         \
  }                                   \
  inline T& operator+=(T& a, T b) {   \
    return a = a + b;                 \
  }                                   \
  inline T& operator-=(T& a, T b) {   \
    return a = a - b;                 \
  }                                   \
  inline T& operator*=(T& a, T b) {   \
    return a = a * b;                 \
  }                                   \
  inline T& operator/=(T& a, T b) {   \
    return a = a / b;                 \
  }                                   \
  inline bool operator==(T a, T b) {  \
    return float(a) == float(b);      \
  }                                   \
  inline bool operator!=(T a, T b) {  \
    return float(a) != float(b);      \
  }                                   \
  inline bool operator<(T a, T b) {   \
    return float(a) < float(b);       \
  }                                   \
  inline bool operator>(T a, T b) {   \
    return float(a) > float(b);       \
  }                                   \
  inline bool operator<=(T a, T b) {  \
    return float(a) <= float(b);      \
  }                                   \
  inline bool operator>=(T a, T b) {  \
    return float(a) >= float(b);      \
  }

TERN_SIMT_NARROW_OPERATORS(__half)
TERN_SIMT_NARROW_OPERATORS(__nv_bfloat16)
#undef TERN_SIMT_NARROW_OPERATORS

inline __half __hadd(__half a, __half b) {
  return a + b;
}
inline __half __hmul(__half a, __half b) {
  return a * b;
}
inline __half __hfma(__half a, __half b, __half c) {
  return __half(std::fma(float(a), float(b), float(c)));  // one rounding, as the instruction
}

// --- vector types ---------------------------------------------------------------------------
// CUDA aligns each to its size (float4: 16 bytes); loads of them must be aligned on a GPU.

#define TERN_SIMT_VECTOR2(name, T)     \
  struct alignas(2 * sizeof(T)) name { \
    T x, y;                            \
  };                                   \
  inline name make_##name(T x, T y) {  \
    return {x, y};                     \
  }
#define TERN_SIMT_VECTOR4(name, T)                               \
  struct alignas(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)) name { \
    T x, y, z, w;                                                \
  };                                                             \
  inline name make_##name(T x, T y, T z, T w) {                  \
    return {x, y, z, w};                                         \
  }

TERN_SIMT_VECTOR2(float2, float)
TERN_SIMT_VECTOR4(float4, float)
TERN_SIMT_VECTOR2(int2, int)
TERN_SIMT_VECTOR4(int4, int)
TERN_SIMT_VECTOR2(uint2, unsigned)
TERN_SIMT_VECTOR4(uint4, unsigned)
TERN_SIMT_VECTOR4(char4, signed char)
TERN_SIMT_VECTOR4(uchar4, unsigned char)
TERN_SIMT_VECTOR2(short2, short)
TERN_SIMT_VECTOR2(ushort2, unsigned short)
#undef TERN_SIMT_VECTOR2
#undef TERN_SIMT_VECTOR4

inline float2 __half22float2(__half2 value) {
  return {float(value.x), float(value.y)};
}

// --- integer and fast-math intrinsics ----------------------------------------------------------

// Four signed (or unsigned) 8-bit products summed into c, as the DP4A instruction.
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i)
    c += static_cast<int>(static_cast<std::int8_t>(static_cast<std::uint32_t>(a) >> (8 * i))) *
         static_cast<int>(static_cast<std::int8_t>(static_cast<std::uint32_t>(b) >> (8 * i)));
  return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int i = 0; i < 4; ++i) c += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu);
  return c;
}

inline float __int_as_float(int bits) {
  return std::bit_cast<float>(bits);
}
inline int __float_as_int(float value) {
  return std::bit_cast<int>(value);
}
inline unsigned __float_as_uint(float value) {
  return std::bit_cast<unsigned>(value);
}
inline float __uint_as_float(unsigned bits) {
  return std::bit_cast<float>(bits);
}

namespace tern::simt::detail {

// The fast-math intrinsics run with denormals flushed to zero (.ftz).
inline float flush_denormal(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

}  // namespace tern::simt::detail

// __expf is ex2.approx(x * log2(e)): the product is rounded to float first, which is where its
// documented error of 2 + floor(|1.16 x|) ulp comes from; ex2.approx itself is within 2 ulp.
inline float __expf(float x) {
  using ::tern::simt::detail::flush_denormal;
  return flush_denormal(std::exp2(flush_denormal(x) * 1.44269504f));
}
inline float __logf(float x) {
  using ::tern::simt::detail::flush_denormal;
  return std::log2(flush_denormal(x)) * 0.693147181f;
}
// __fdividef(x, y) is x * (1 / y), and for 2^126 < |y| < 2^128 gives 0 (NaN when x is infinite),
// as documented in the programming guide's intrinsic functions table.
inline float __fdividef(float x, float y) {
  const float magnitude = std::fabs(y);
  if (magnitude > 0x1p126f && magnitude < INFINITY) return std::isinf(x) ? NAN : 0.0f;
  return ::tern::simt::detail::flush_denormal(x * (1.0f / y));
}
inline float __frcp_rn(float x) {
  return 1.0f / x;
}
inline float __fmaf_rn(float a, float b, float c) {
  return std::fma(a, b, c);
}
// One rounding each, never fused into an FMA (nvcc's guarantee for these intrinsics). The host
// build targets x86-64 without -mfma, so a plain product or difference is never contracted.
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fsub_rn(float a, float b) {
  return a - b;
}
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline float __saturatef(float x) {
  return std::isnan(x) ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f);
}

#define TERN_SIMT_MIN_MAX(T) \
  inline T min(T a, T b) {   \
    return b < a ? b : a;    \
  }                          \
  inline T max(T a, T b) {   \
    return a < b ? b : a;    \
  }
TERN_SIMT_MIN_MAX(int)
TERN_SIMT_MIN_MAX(unsigned)
TERN_SIMT_MIN_MAX(long long)
TERN_SIMT_MIN_MAX(unsigned long long)
#undef TERN_SIMT_MIN_MAX

// A read-only global load: a plain load on the emulator.
template <class T>
T __ldg(const T* address) {
  return *address;
}
