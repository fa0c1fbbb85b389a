// The tensor-core instructions on the emulator (kernels/simt/tensor_core.h): every fragment
// element lands where the PTX ISA's layout tables put it, lane by lane; the float mma equals a
// plain matrix product computed with fused multiply-adds in k order, the integer mma an exact one;
// and misuse (a missing lane, a lane at another instruction, a misaligned ldmatrix row, a
// fragment register past its end) fails the launch with a named error and the line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/half.h"
#include "kernels/simt/device_memory.h"
#include "kernels/simt/portable.h"
#include "kernels/simt/tensor_core.h"
#include "tests/unit/simt/simt_test_support.h"

namespace tern::simt {
namespace {

using kernels::cuda::Fragment;
using kernels::cuda::MmaA16;
using kernels::cuda::MmaA8K16;
using kernels::cuda::MmaAccF32;
using kernels::cuda::MmaAccS32;
using kernels::cuda::MmaB16;
using kernels::cuda::MmaB8K16;
using kernels::cuda::MmaFloat;
using kernels::cuda::MmaInt;

int g_line = 0;

// The PTX ISA's tables (9.7.14.5.8 and 9.7.14.5.9), written out here independently of the
// emulator: the row and column of element i of a lane's fragment.
struct Position {
  int row;
  int col;
};
Position f16_a(int lane, int i) {
  return {lane / 4 + ((i < 2 || (i >= 4 && i < 6)) ? 0 : 8),
          lane % 4 * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
Position f16_b(int lane, int i) {
  return {lane % 4 * 2 + (i & 1) + (i >= 2 ? 8 : 0), lane / 4};
}
Position accumulator(int lane, int i) {
  return {lane / 4 + (i < 2 ? 0 : 8), lane % 4 * 2 + (i & 1)};
}
Position s8_a_k32(int lane, int i) {
  return {lane / 4 + ((i < 4 || (i >= 8 && i < 12)) ? 0 : 8),
          lane % 4 * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
}
Position s8_b_k32(int lane, int i) {
  return {lane % 4 * 4 + (i & 3) + (i >= 4 ? 16 : 0), lane / 4};
}
Position s8_a_k16(int lane, int i) {
  return {lane / 4 + (i < 4 ? 0 : 8), lane % 4 * 4 + (i & 3)};
}
Position s8_b_k16(int lane, int i) {
  return {lane % 4 * 4 + i, lane / 4};
}

bool operator==(Position a, Position b) {
  return a.row == b.row && a.col == b.col;
}

// The tables' positions for a few lanes written out as numbers, so that the formulas above are not
// the only statement of the layout: lanes 0 and 31 (group 7, thread 3) and lane 6 (group 1,
// thread 2).
TEST(SimtTensorCore, LayoutTablesMatchThePtxFigures) {
  const Position f16_a_lane0[8] = {{0, 0}, {0, 1}, {8, 0}, {8, 1}, {0, 8}, {0, 9}, {8, 8}, {8, 9}};
  const Position f16_a_lane31[8] = {{7, 6},  {7, 7},  {15, 6},  {15, 7},
                                    {7, 14}, {7, 15}, {15, 14}, {15, 15}};
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(f16_a(0, i) == f16_a_lane0[i]) << i;
    EXPECT_TRUE(f16_a(31, i) == f16_a_lane31[i]) << i;
  }
  const Position f16_b_lane6[4] = {{4, 1}, {5, 1}, {12, 1}, {13, 1}};
  const Position accumulator_lane6[4] = {{1, 4}, {1, 5}, {9, 4}, {9, 5}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(f16_b(6, i) == f16_b_lane6[i]) << i;
    EXPECT_TRUE(accumulator(6, i) == accumulator_lane6[i]) << i;
  }
  const Position s8_a_k32_lane31[16] = {{7, 12},  {7, 13},  {7, 14},  {7, 15}, {15, 12}, {15, 13},
                                        {15, 14}, {15, 15}, {7, 28},  {7, 29}, {7, 30},  {7, 31},
                                        {15, 28}, {15, 29}, {15, 30}, {15, 31}};
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(s8_a_k32(31, i) == s8_a_k32_lane31[i]) << i;
  const Position s8_b_k32_lane6[8] = {{8, 1},  {9, 1},  {10, 1}, {11, 1},
                                      {24, 1}, {25, 1}, {26, 1}, {27, 1}};
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(s8_b_k32(6, i) == s8_b_k32_lane6[i]) << i;
  const Position s8_a_k16_lane6[8] = {{1, 8}, {1, 9}, {1, 10}, {1, 11},
                                      {9, 8}, {9, 9}, {9, 10}, {9, 11}};
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(s8_a_k16(6, i) == s8_a_k16_lane6[i]) << i;
  const Position s8_b_k16_lane6[4] = {{8, 1}, {9, 1}, {10, 1}, {11, 1}};
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(s8_b_k16(6, i) == s8_b_k16_lane6[i]) << i;
}

std::uint32_t pack16(std::uint16_t low, std::uint16_t high) {
  return static_cast<std::uint32_t>(low) | static_cast<std::uint32_t>(high) << 16;
}

// --- float mma --------------------------------------------------------------------------------

// A is 16x16 and B 16x8, both row-major 16-bit values; C and D 16x8 floats.
template <MmaFloat type>
__global__ void float_mma(const std::uint16_t* a, const std::uint16_t* b, const float* c,
                          float* d) {
  const int lane = static_cast<int>(threadIdx.x);
  MmaA16 fa;
  MmaB16 fb;
  MmaAccF32 fc;
  MmaAccF32 fd;
  for (int r = 0; r < 4; ++r) {
    const Position low = f16_a(lane, 2 * r);
    const Position high = f16_a(lane, 2 * r + 1);
    fa[r] = pack16(a[low.row * 16 + low.col], a[high.row * 16 + high.col]);
  }
  for (int r = 0; r < 2; ++r) {
    const Position low = f16_b(lane, 2 * r);
    const Position high = f16_b(lane, 2 * r + 1);
    fb[r] = pack16(b[low.row * 8 + low.col], b[high.row * 8 + high.col]);
  }
  for (int i = 0; i < 4; ++i) fc[i] = c[accumulator(lane, i).row * 8 + accumulator(lane, i).col];
  kernels::cuda::mma_m16n8k16<type>(fd, fa, fb, fc);
  for (int i = 0; i < 4; ++i) d[accumulator(lane, i).row * 8 + accumulator(lane, i).col] = fd[i];
}

template <MmaFloat type>
void check_float_mma(std::uint32_t seed) {
  const auto to_bits = [](float v) {
    return type == MmaFloat::f16 ? kernels::f32_to_f16(v) : kernels::f32_to_bf16(v);
  };
  const auto of_bits = [](std::uint16_t v) {
    return type == MmaFloat::f16 ? kernels::f16_to_f32(v) : kernels::bf16_to_f32(v);
  };
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  DeviceVector<std::uint16_t> a(16 * 16), b(16 * 8);
  DeviceVector<float> c(16 * 8), d(16 * 8);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = to_bits(value(random));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = to_bits(value(random));
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = value(random);
  ASSERT_TRUE(
      launch("float_mma", config_of(1, 32), float_mma<type>, a.data(), b.data(), c.data(), d.data())
          .ok());
  for (int row = 0; row < 16; ++row) {
    for (int col = 0; col < 8; ++col) {
      float fused = c[row * 8 + col];
      double exact = fused;
      for (int k = 0; k < 16; ++k) {
        fused = std::fma(of_bits(a[row * 16 + k]), of_bits(b[k * 8 + col]), fused);
        exact += static_cast<double>(of_bits(a[row * 16 + k])) * of_bits(b[k * 8 + col]);
      }
      EXPECT_EQ(d[row * 8 + col], fused) << row << "," << col;
      EXPECT_NEAR(d[row * 8 + col], exact, 1e-4) << row << "," << col;
    }
  }
}

TEST(SimtTensorCore, F16MmaIsTheMatrixProductInKOrder) {
  for (std::uint32_t seed = 1; seed <= 3; ++seed) check_float_mma<MmaFloat::f16>(seed);
}

TEST(SimtTensorCore, Bf16MmaIsTheMatrixProductInKOrder) {
  for (std::uint32_t seed = 1; seed <= 3; ++seed) check_float_mma<MmaFloat::bf16>(seed);
}

// Lane by lane: with B selecting one column k of A per output column, D shows which A element
// each lane's register carried; with A selecting rows of B, which B element.
TEST(SimtTensorCore, F16FragmentsFollowTheLayoutTablesLaneByLane) {
  for (int k0 = 0; k0 < 16; k0 += 8) {
    DeviceVector<std::uint16_t> a(16 * 16), b(16 * 8);
    DeviceVector<float> c(16 * 8, 0.0f), d(16 * 8);
    for (int row = 0; row < 16; ++row)
      for (int k = 0; k < 16; ++k) a[row * 16 + k] = kernels::f32_to_f16(row * 16.0f + k);
    for (int k = 0; k < 16; ++k)
      for (int col = 0; col < 8; ++col)
        b[k * 8 + col] = kernels::f32_to_f16(k == k0 + col ? 1.0f : 0.0f);
    ASSERT_TRUE(launch("float_mma", config_of(1, 32), float_mma<MmaFloat::f16>, a.data(), b.data(),
                       c.data(), d.data())
                    .ok());
    for (int row = 0; row < 16; ++row)
      for (int col = 0; col < 8; ++col)
        EXPECT_EQ(d[row * 8 + col], row * 16.0f + k0 + col) << row << "," << col;
  }
}

TEST(SimtTensorCore, F16BFragmentsFollowTheLayoutTableLaneByLane) {
  // A is the identity: row r of D is row r of B, for the 16 rows B has.
  DeviceVector<std::uint16_t> a(16 * 16), b(16 * 8);
  DeviceVector<float> c(16 * 8, 0.0f), d(16 * 8);
  for (int row = 0; row < 16; ++row)
    for (int k = 0; k < 16; ++k) a[row * 16 + k] = kernels::f32_to_f16(row == k ? 1.0f : 0.0f);
  for (int k = 0; k < 16; ++k)
    for (int col = 0; col < 8; ++col) b[k * 8 + col] = kernels::f32_to_f16(k * 8.0f + col);
  ASSERT_TRUE(launch("float_mma", config_of(1, 32), float_mma<MmaFloat::f16>, a.data(), b.data(),
                     c.data(), d.data())
                  .ok());
  for (int row = 0; row < 16; ++row)
    for (int col = 0; col < 8; ++col)
      EXPECT_EQ(d[row * 8 + col], row * 8.0f + col) << row << "," << col;
}

// --- integer mma ------------------------------------------------------------------------------

template <int K, MmaInt a_type, MmaInt b_type>
__global__ void int_mma(const std::uint8_t* a, const std::uint8_t* b, const std::int32_t* c,
                        std::int32_t* d) {
  const int lane = static_cast<int>(threadIdx.x);
  Fragment<std::uint32_t, K / 8> fa;
  Fragment<std::uint32_t, K / 16> fb;
  MmaAccS32 fc;
  MmaAccS32 fd;
  for (int r = 0; r < K / 8; ++r) {
    std::uint32_t word = 0;
    for (int e = 0; e < 4; ++e) {
      const Position p = K == 32 ? s8_a_k32(lane, 4 * r + e) : s8_a_k16(lane, 4 * r + e);
      word |= static_cast<std::uint32_t>(a[p.row * K + p.col]) << (8 * e);
    }
    fa[r] = word;
  }
  for (int r = 0; r < K / 16; ++r) {
    std::uint32_t word = 0;
    for (int e = 0; e < 4; ++e) {
      const Position p = K == 32 ? s8_b_k32(lane, 4 * r + e) : s8_b_k16(lane, 4 * r + e);
      word |= static_cast<std::uint32_t>(b[p.row * 8 + p.col]) << (8 * e);
    }
    fb[r] = word;
  }
  for (int i = 0; i < 4; ++i) fc[i] = c[accumulator(lane, i).row * 8 + accumulator(lane, i).col];
  if constexpr (K == 32) {
    kernels::cuda::mma_m16n8k32<a_type, b_type>(fd, fa, fb, fc);
  } else {
    kernels::cuda::mma_m16n8k16<a_type, b_type>(fd, fa, fb, fc);
  }
  for (int i = 0; i < 4; ++i) d[accumulator(lane, i).row * 8 + accumulator(lane, i).col] = fd[i];
}

template <int K, MmaInt a_type, MmaInt b_type>
void check_int_mma(std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<std::int32_t> accumulator_value(-(1 << 30), 1 << 30);
  DeviceVector<std::uint8_t> a(16 * K), b(K * 8);
  DeviceVector<std::int32_t> c(16 * 8), d(16 * 8);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::uint8_t>(byte(random));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(byte(random));
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = accumulator_value(random);
  // The extremes too: -128 * -128 and 255 * 255 in every product of row 0 and column 0.
  for (int k = 0; k < K; ++k) {
    a[k] = a_type == MmaInt::s8 ? 0x80 : 0xff;
    b[k * 8] = b_type == MmaInt::s8 ? 0x80 : 0xff;
  }
  ASSERT_TRUE(launch("int_mma", config_of(1, 32), int_mma<K, a_type, b_type>, a.data(), b.data(),
                     c.data(), d.data())
                  .ok());
  const auto value = [](MmaInt type, std::uint8_t bits) {
    return type == MmaInt::s8 ? static_cast<std::int64_t>(static_cast<std::int8_t>(bits))
                              : static_cast<std::int64_t>(bits);
  };
  for (int row = 0; row < 16; ++row) {
    for (int col = 0; col < 8; ++col) {
      std::int64_t sum = c[row * 8 + col];
      for (int k = 0; k < K; ++k)
        sum += value(a_type, a[row * K + k]) * value(b_type, b[k * 8 + col]);
      EXPECT_EQ(d[row * 8 + col], static_cast<std::int32_t>(static_cast<std::uint32_t>(sum)))
          << row << "," << col;
    }
  }
}

TEST(SimtTensorCore, Int8MmaK32IsExactForEverySignedness) {
  check_int_mma<32, MmaInt::s8, MmaInt::s8>(1);
  check_int_mma<32, MmaInt::u8, MmaInt::s8>(2);
  check_int_mma<32, MmaInt::s8, MmaInt::u8>(3);
  check_int_mma<32, MmaInt::u8, MmaInt::u8>(4);
}

TEST(SimtTensorCore, Int8MmaK16IsExactForEverySignedness) {
  check_int_mma<16, MmaInt::s8, MmaInt::s8>(5);
  check_int_mma<16, MmaInt::u8, MmaInt::s8>(6);
  check_int_mma<16, MmaInt::s8, MmaInt::u8>(7);
  check_int_mma<16, MmaInt::u8, MmaInt::u8>(8);
}

// --- ldmatrix ---------------------------------------------------------------------------------

// Four 8x8 matrices of 16-bit values m * 64 + row * 8 + col in shared memory, one row of 8 per
// 16 bytes; each lane gives the row ldmatrix's table asks of it and writes what it received.
template <int matrices, bool transpose>
__global__ void load_matrices(std::uint32_t* out) {
  TERN_SHARED(std::uint16_t, tiles, 4 * 64);
  const unsigned lane = threadIdx.x;
  for (unsigned i = lane; i < 4 * 64; i += 32) tiles[i] = static_cast<std::uint16_t>(i);
  __syncthreads();
  Fragment<std::uint32_t, matrices> r;
  kernels::cuda::ldmatrix<matrices, transpose>(r, tiles, (lane % (8 * matrices)) * 8);
  for (int m = 0; m < matrices; ++m) out[lane * 4 + m] = r[m];
}

template <int matrices, bool transpose>
void check_ldmatrix() {
  DeviceVector<std::uint32_t> out(32 * 4, 0);
  for (Schedule schedule : kAllSchedules) {
    ASSERT_TRUE(launch("load_matrices", config_of(1, 32, schedule),
                       load_matrices<matrices, transpose>, out.data())
                    .ok());
    for (unsigned lane = 0; lane < 32; ++lane) {
      for (unsigned m = 0; m < matrices; ++m) {
        const unsigned row = transpose ? lane % 4 * 2 : lane / 4;
        const unsigned col = transpose ? lane / 4 : lane % 4 * 2;
        const unsigned next_row = transpose ? row + 1 : row;
        const unsigned next_col = transpose ? col : col + 1;
        const std::uint32_t expected =
            pack16(static_cast<std::uint16_t>(m * 64 + row * 8 + col),
                   static_cast<std::uint16_t>(m * 64 + next_row * 8 + next_col));
        EXPECT_EQ(out[lane * 4 + m], expected) << "lane " << lane << " matrix " << m;
      }
    }
  }
}

TEST(SimtTensorCore, LdmatrixGivesEachLaneItsElements) {
  check_ldmatrix<1, false>();
  check_ldmatrix<2, false>();
  check_ldmatrix<4, false>();
}

TEST(SimtTensorCore, LdmatrixTransposedGivesEachLaneItsElements) {
  check_ldmatrix<1, true>();
  check_ldmatrix<2, true>();
  check_ldmatrix<4, true>();
}

// --- misuse -----------------------------------------------------------------------------------

__global__ void mma_in_half_a_warp(float* d) {
  MmaA16 a{};
  MmaB16 b{};
  MmaAccF32 c{};
  MmaAccF32 out;
  if (threadIdx.x < 16) {
    AT_LINE(g_line, kernels::cuda::mma_m16n8k16<MmaFloat::f16>(out, a, b, c));
    d[threadIdx.x] = out[0];
  }
}

TEST(SimtTensorCore, MmaWithoutTheWholeWarpIsAnError) {
  DeviceVector<float> d(32);
  const LaunchStatus status =
      launch("mma_in_half_a_warp", config_of(1, 32), mma_in_half_a_warp, d.data());
  expect_fault(status, LaunchErrorKind::warp_mask, "mma_in_half_a_warp", "tensor_core_test.cpp",
               g_line);
  EXPECT_NE(status.message.find("mma.m16n8k16.f16"), std::string::npos) << status.message;
}

__global__ void mma_in_a_small_block(float* d) {
  MmaA16 a{};
  MmaB16 b{};
  MmaAccF32 c{};
  MmaAccF32 out;
  AT_LINE(g_line, kernels::cuda::mma_m16n8k16<MmaFloat::bf16>(out, a, b, c));
  d[threadIdx.x] = out[0];
}

TEST(SimtTensorCore, MmaInAWarpOfFewerThan32ThreadsIsAnError) {
  DeviceVector<float> d(16);
  const LaunchStatus status =
      launch("mma_in_a_small_block", config_of(1, 16), mma_in_a_small_block, d.data());
  expect_fault(status, LaunchErrorKind::warp_mask, "mma_in_a_small_block", "tensor_core_test.cpp",
               g_line);
  EXPECT_NE(status.message.find("all 32 lanes"), std::string::npos) << status.message;
}

__global__ void misaligned_ldmatrix(std::uint32_t* out) {
  TERN_SHARED(std::uint16_t, tiles, 128);
  for (unsigned i = threadIdx.x; i < 128; i += 32) tiles[i] = 1;
  __syncthreads();
  Fragment<std::uint32_t, 1> r;
  // Rows start one element (2 bytes) past a 16-byte boundary.
  AT_LINE(g_line, kernels::cuda::ldmatrix<1>(r, tiles, threadIdx.x % 8 * 8 + 1));
  out[threadIdx.x] = r[0];
}

TEST(SimtTensorCore, MisalignedLdmatrixRowIsAnError) {
  DeviceVector<std::uint32_t> out(32);
  const LaunchStatus status =
      launch("misaligned_ldmatrix", config_of(1, 32), misaligned_ldmatrix, out.data());
  expect_fault(status, LaunchErrorKind::misaligned_access, "misaligned_ldmatrix",
               "tensor_core_test.cpp", g_line);
}

__global__ void ldmatrix_past_the_array(std::uint32_t* out) {
  TERN_SHARED(std::uint16_t, tiles, 64);
  for (unsigned i = threadIdx.x; i < 64; i += 32) tiles[i] = 1;
  __syncthreads();
  Fragment<std::uint32_t, 2> r;
  // Two matrices need 16 rows; the array holds 8.
  AT_LINE(g_line, kernels::cuda::ldmatrix<2>(r, tiles, threadIdx.x % 16 * 8));
  out[threadIdx.x] = r[0];
}

TEST(SimtTensorCore, LdmatrixRowOutsideItsSharedArrayIsAnError) {
  DeviceVector<std::uint32_t> out(32);
  const LaunchStatus status =
      launch("ldmatrix_past_the_array", config_of(1, 32), ldmatrix_past_the_array, out.data());
  EXPECT_EQ(status.kind, LaunchErrorKind::invalid_argument) << status.message;
  EXPECT_NE(status.message.find("is outside shared array 'tiles'"), std::string::npos)
      << status.message;
}

__global__ void wrong_fragment_register(float* d) {
  MmaAccF32 acc{};
  const int i = static_cast<int>(threadIdx.x % 8);  // 4..7 lie past the 4 registers
  d[threadIdx.x] = acc[i];
}

TEST(SimtTensorCore, FragmentRegisterPastItsEndIsAnError) {
  DeviceVector<float> d(32);
  const LaunchStatus status =
      launch("wrong_fragment_register", config_of(1, 32), wrong_fragment_register, d.data());
  EXPECT_EQ(status.kind, LaunchErrorKind::invalid_argument) << status.message;
  EXPECT_NE(status.message.find("fragment register 4 of a fragment of 4 registers"),
            std::string::npos)
      << status.message;
}

}  // namespace
}  // namespace tern::simt
