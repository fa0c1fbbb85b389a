#pragma once

// The tensor-core instructions for kernel source that nvcc and the host compiler both take:
// warp-wide matrix multiply-accumulate (mma.sync) and the shared-memory matrix load that feeds it
// (ldmatrix). Under nvcc each is one inline PTX instruction; under the host compiler the emulator
// runs it over the whole warp, with the per-lane fragment layouts of the PTX ISA (9.7.14.5,
// "Matrix Fragments for mma.m16n8k16" and "... m16n8k32"), and fails the launch when a lane of the
// warp is missing (the instructions are .aligned), when an ldmatrix row is not 16-byte aligned or
// leaves its shared array, and when a fragment is indexed past its registers.
//
// Fragments (lane = %laneid, group = lane / 4, thread = lane % 4; "row, col" of the tile):
// - m16n8k16 f16/bf16: A 16x16 row-major, 4 registers of 2 elements: element i (0..7) of the
//   lane is A[group + 8 * (i / 2 % 2)][thread * 2 + i % 2 + 8 * (i / 4)]; B 16x8 column-major,
//   2 registers of 2: element i (0..3) is B[thread * 2 + i % 2 + 8 * (i / 2)][group].
// - m16n8k32 s8/u8: A 16x32, 4 registers of 4: element i (0..15) is
//   A[group + 8 * (i / 4 % 2)][thread * 4 + i % 4 + 16 * (i / 8)]; B 32x8, 2 registers of 4:
//   element i (0..7) is B[thread * 4 + i % 4 + 16 * (i / 4)][group].
// - m16n8k16 s8/u8: A 16x16, 2 registers of 4: element i (0..7) is
//   A[group + 8 * (i / 4)][thread * 4 + i % 4]; B 16x8, 1 register of 4: element i (0..3) is
//   B[thread * 4 + i][group].
// - C and D (every shape), 4 registers: element i (0..3) is D[group + 8 * (i / 2)][thread * 2 +
//   i % 2].
// Lower elements sit in the lower bits of a register.
//
// The emulated float mma computes each D element as C plus the 16 products added one after
// another with fused multiply-adds, k = 0 first. The hardware's internal order and intermediate
// precision are not documented and may differ in the last bits (docs/gpu.md); integer mma is
// exact either way.

#include <cstdint>

#if defined(__CUDACC__)
#define TERN_TC_DEVICE __device__ __forceinline__
#else
#include <source_location>
#include <string>

#include "kernels/simt/runtime.h"
#include "kernels/simt/shared_span.h"
#define TERN_TC_DEVICE inline
#endif

namespace tern::kernels::cuda {

// A lane's registers of one fragment. Under the emulator an index past them fails the launch.
template <class T, int N>
struct Fragment {
  T registers[N];

#if defined(__CUDACC__)
  TERN_TC_DEVICE T& operator[](int i) {
    return registers[i];
  }
  TERN_TC_DEVICE const T& operator[](int i) const {
    return registers[i];
  }
#else
  T& operator[](int i) {
    return registers[checked(i)];
  }
  const T& operator[](int i) const {
    return registers[checked(i)];
  }

 private:
  static int checked(int i) {
    if (i >= 0 && i < N) return i;
    ::tern::simt::detail::report_fault(::tern::simt::LaunchErrorKind::invalid_argument, {},
                                       "fragment register " + std::to_string(i) +
                                           " of a fragment of " + std::to_string(N) + " registers");
    return 0;
  }
#endif
};

using MmaA16 = Fragment<std::uint32_t, 4>;    // m16n8k16 f16/bf16 A, m16n8k32 s8/u8 A
using MmaB16 = Fragment<std::uint32_t, 2>;    // m16n8k16 f16/bf16 B, m16n8k32 s8/u8 B
using MmaAccF32 = Fragment<float, 4>;         // C and D of the float mma
using MmaAccS32 = Fragment<std::int32_t, 4>;  // C and D of the integer mma
using MmaA8K16 = Fragment<std::uint32_t, 2>;  // m16n8k16 s8/u8 A
using MmaB8K16 = Fragment<std::uint32_t, 1>;  // m16n8k16 s8/u8 B

enum class MmaFloat { f16, bf16 };
enum class MmaInt { s8, u8 };

#if !defined(__CUDACC__)
namespace emulated {
void mma_float(MmaFloat type, MmaAccF32& d, const MmaA16& a, const MmaB16& b, const MmaAccF32& c,
               std::source_location at);
void mma_int_k32(MmaInt a_type, MmaInt b_type, MmaAccS32& d, const MmaA16& a, const MmaB16& b,
                 const MmaAccS32& c, std::source_location at);
void mma_int_k16(MmaInt a_type, MmaInt b_type, MmaAccS32& d, const MmaA8K16& a, const MmaB8K16& b,
                 const MmaAccS32& c, std::source_location at);
// `row`: this lane's row of 16 bytes (null for a lane whose address the count leaves unused).
void ldmatrix(int matrices, bool transpose, std::uint32_t* registers, const std::byte* row,
              std::source_location at);
// The row at element `index` of a shared array, checked for bounds and 16-byte alignment and
// recorded as a read of its 16 bytes; null after reporting a fault.
const std::byte* checked_row(const std::byte* address, bool in_bounds, std::source_location at);
}  // namespace emulated
#endif

// D = A * B + C on a 16x8x16 tile of f16 or bf16 inputs with f32 accumulators
// (mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32).
template <MmaFloat type>
TERN_TC_DEVICE void mma_m16n8k16(MmaAccF32& d, const MmaA16& a, const MmaB16& b, const MmaAccF32& c
#if !defined(__CUDACC__)
                                 ,
                                 std::source_location at = std::source_location::current()
#endif
) {
#if defined(__CUDACC__)
  if constexpr (type == MmaFloat::f16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d.registers[0]), "=f"(d.registers[1]), "=f"(d.registers[2]), "=f"(d.registers[3])
        : "r"(a.registers[0]), "r"(a.registers[1]), "r"(a.registers[2]), "r"(a.registers[3]),
          "r"(b.registers[0]), "r"(b.registers[1]), "f"(c.registers[0]), "f"(c.registers[1]),
          "f"(c.registers[2]), "f"(c.registers[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d.registers[0]), "=f"(d.registers[1]), "=f"(d.registers[2]), "=f"(d.registers[3])
        : "r"(a.registers[0]), "r"(a.registers[1]), "r"(a.registers[2]), "r"(a.registers[3]),
          "r"(b.registers[0]), "r"(b.registers[1]), "f"(c.registers[0]), "f"(c.registers[1]),
          "f"(c.registers[2]), "f"(c.registers[3]));
  }
#else
  emulated::mma_float(type, d, a, b, c, at);
#endif
}

#if defined(__CUDACC__)
#define TERN_MMA_INT_K32(atype, btype)                                                         \
  asm volatile(                                                                                \
      "mma.sync.aligned.m16n8k32.row.col.s32." atype "." btype                                 \
      ".s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"                       \
      : "=r"(d.registers[0]), "=r"(d.registers[1]), "=r"(d.registers[2]), "=r"(d.registers[3]) \
      : "r"(a.registers[0]), "r"(a.registers[1]), "r"(a.registers[2]), "r"(a.registers[3]),    \
        "r"(b.registers[0]), "r"(b.registers[1]), "r"(c.registers[0]), "r"(c.registers[1]),    \
        "r"(c.registers[2]), "r"(c.registers[3]))
#define TERN_MMA_INT_K16(atype, btype)                                                         \
  asm volatile(                                                                                \
      "mma.sync.aligned.m16n8k16.row.col.s32." atype "." btype                                 \
      ".s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"                                   \
      : "=r"(d.registers[0]), "=r"(d.registers[1]), "=r"(d.registers[2]), "=r"(d.registers[3]) \
      : "r"(a.registers[0]), "r"(a.registers[1]), "r"(b.registers[0]), "r"(c.registers[0]),    \
        "r"(c.registers[1]), "r"(c.registers[2]), "r"(c.registers[3]))
#endif

// D = A * B + C on a 16x8x32 tile of 8-bit integers with s32 accumulators, exact
// (mma.sync.aligned.m16n8k32.row.col.s32.{s8,u8}.{s8,u8}.s32).
template <MmaInt a_type, MmaInt b_type>
TERN_TC_DEVICE void mma_m16n8k32(MmaAccS32& d, const MmaA16& a, const MmaB16& b, const MmaAccS32& c
#if !defined(__CUDACC__)
                                 ,
                                 std::source_location at = std::source_location::current()
#endif
) {
#if defined(__CUDACC__)
  if constexpr (a_type == MmaInt::s8 && b_type == MmaInt::s8) {
    TERN_MMA_INT_K32("s8", "s8");
  } else if constexpr (a_type == MmaInt::s8) {
    TERN_MMA_INT_K32("s8", "u8");
  } else if constexpr (b_type == MmaInt::s8) {
    TERN_MMA_INT_K32("u8", "s8");
  } else {
    TERN_MMA_INT_K32("u8", "u8");
  }
#else
  emulated::mma_int_k32(a_type, b_type, d, a, b, c, at);
#endif
}

// The same on a 16x8x16 tile (mma.sync.aligned.m16n8k16.row.col.s32.{s8,u8}.{s8,u8}.s32): for
// blocks of 16 values, each with its own scale (Q6_K's sub-blocks).
template <MmaInt a_type, MmaInt b_type>
TERN_TC_DEVICE void mma_m16n8k16(MmaAccS32& d, const MmaA8K16& a, const MmaB8K16& b,
                                 const MmaAccS32& c
#if !defined(__CUDACC__)
                                 ,
                                 std::source_location at = std::source_location::current()
#endif
) {
#if defined(__CUDACC__)
  if constexpr (a_type == MmaInt::s8 && b_type == MmaInt::s8) {
    TERN_MMA_INT_K16("s8", "s8");
  } else if constexpr (a_type == MmaInt::s8) {
    TERN_MMA_INT_K16("s8", "u8");
  } else if constexpr (b_type == MmaInt::s8) {
    TERN_MMA_INT_K16("u8", "s8");
  } else {
    TERN_MMA_INT_K16("u8", "u8");
  }
#else
  emulated::mma_int_k16(a_type, b_type, d, a, b, c, at);
#endif
}

// ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{,.trans}.shared.b16: `matrices` 8x8 matrices of 16-bit
// elements from shared memory. Lanes 8 * m .. 8 * m + 7 each give the start of one row of
// matrix m (16 bytes, 16-byte aligned), as element `index` of the shared array `shared`; a lane
// whose address the count leaves unused gives any index. Register m of lane l receives row l / 4,
// columns 2 * (l % 4) and 2 * (l % 4) + 1 of matrix m, or with `transpose` rows 2 * (l % 4) and
// 2 * (l % 4) + 1 of column l / 4.
template <int matrices, bool transpose = false, class Shared>
TERN_TC_DEVICE void ldmatrix(Fragment<std::uint32_t, matrices>& r, const Shared& shared,
                             unsigned index
#if !defined(__CUDACC__)
                             ,
                             std::source_location at = std::source_location::current()
#endif
) {
  static_assert(matrices == 1 || matrices == 2 || matrices == 4, "ldmatrix loads 1, 2 or 4");
#if defined(__CUDACC__)
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(&shared[index]));
  if constexpr (matrices == 1 && !transpose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                 : "=r"(r.registers[0])
                 : "r"(address));
  } else if constexpr (matrices == 1) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(r.registers[0])
                 : "r"(address));
  } else if constexpr (matrices == 2 && !transpose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r.registers[0]), "=r"(r.registers[1])
                 : "r"(address));
  } else if constexpr (matrices == 2) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r.registers[0]), "=r"(r.registers[1])
                 : "r"(address));
  } else if constexpr (!transpose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r.registers[0]), "=r"(r.registers[1]), "=r"(r.registers[2]),
                   "=r"(r.registers[3])
                 : "r"(address));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r.registers[0]), "=r"(r.registers[1]), "=r"(r.registers[2]),
                   "=r"(r.registers[3])
                 : "r"(address));
  }
#else
  const unsigned lane = ::tern::simt::detail::lane_id();
  const std::byte* row = nullptr;
  if (lane < 8u * matrices) row = shared.checked_row(index, 16, at);
  emulated::ldmatrix(matrices, transpose, r.registers, row, at);
#endif
}

}  // namespace tern::kernels::cuda

#undef TERN_TC_DEVICE
