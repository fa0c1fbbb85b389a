#include "kernels/simt/tensor_core.h"

#include <array>
#include <cmath>
#include <cstring>

#include "kernels/cpu/half.h"

namespace tern::kernels::cuda::emulated {
namespace {

using ::tern::simt::detail::site_of;
using ::tern::simt::detail::warp_collective;

// Element i of a lane's 32-bit registers, `bits` wide.
std::uint32_t element(const std::uint32_t* registers, int i, int bits) {
  const int per_register = 32 / bits;
  const std::uint32_t word = registers[i / per_register];
  const int shift = (i % per_register) * bits;
  return bits == 32 ? word : (word >> shift) & ((1u << bits) - 1);
}

float float_of(MmaFloat type, std::uint32_t bits) {
  const auto half = static_cast<std::uint16_t>(bits);
  return type == MmaFloat::f16 ? f16_to_f32(half) : bf16_to_f32(half);
}

std::int32_t int_of(MmaInt type, std::uint32_t bits) {
  return type == MmaInt::s8 ? static_cast<std::int32_t>(static_cast<std::int8_t>(bits))
                            : static_cast<std::int32_t>(bits);
}

// Where element i of a lane's accumulator fragment sits in the 16x8 tile.
int accumulator_row(int lane, int i) {
  return lane / 4 + 8 * (i / 2);
}
int accumulator_col(int lane, int i) {
  return lane % 4 * 2 + i % 2;
}

struct FloatMma {
  MmaFloat type;
  const MmaA16* a;
  const MmaB16* b;
  const MmaAccF32* c;
  MmaAccF32* d;
};

void complete_float(void* const* lanes) {
  const auto& first = *static_cast<const FloatMma*>(lanes[0]);
  float a[16][16];
  float b[16][8];
  float c[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const auto& mma = *static_cast<const FloatMma*>(lanes[lane]);
    const int group = lane / 4;
    const int thread = lane % 4;
    for (int i = 0; i < 8; ++i) {
      a[group + 8 * (i / 2 % 2)][thread * 2 + i % 2 + 8 * (i / 4)] =
          float_of(first.type, element(mma.a->registers, i, 16));
    }
    for (int i = 0; i < 4; ++i) {
      b[thread * 2 + i % 2 + 8 * (i / 2)][group] =
          float_of(first.type, element(mma.b->registers, i, 16));
    }
    for (int i = 0; i < 4; ++i) {
      c[accumulator_row(lane, i)][accumulator_col(lane, i)] = mma.c->registers[i];
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    auto& mma = *static_cast<FloatMma*>(lanes[lane]);
    for (int i = 0; i < 4; ++i) {
      const int row = accumulator_row(lane, i);
      const int col = accumulator_col(lane, i);
      float sum = c[row][col];
      for (int k = 0; k < 16; ++k) sum = std::fma(a[row][k], b[k][col], sum);
      mma.d->registers[i] = sum;
    }
  }
}

template <int K>
struct IntMma {
  MmaInt a_type;
  MmaInt b_type;
  const std::uint32_t* a;
  const std::uint32_t* b;
  const MmaAccS32* c;
  MmaAccS32* d;
};

// The 8-bit element i of a lane's A or B fragment: its row and column in the tile.
template <int K>
void a_position(int lane, int i, int& row, int& col) {
  const int group = lane / 4;
  const int thread = lane % 4;
  if constexpr (K == 32) {
    row = group + 8 * (i / 4 % 2);
    col = thread * 4 + i % 4 + 16 * (i / 8);
  } else {
    row = group + 8 * (i / 4);
    col = thread * 4 + i % 4;
  }
}
template <int K>
void b_position(int lane, int i, int& row, int& col) {
  row = lane % 4 * 4 + i % 4 + 16 * (i / 4);
  col = lane / 4;
}

template <int K>
void complete_int(void* const* lanes) {
  const auto& first = *static_cast<const IntMma<K>*>(lanes[0]);
  std::int32_t a[16][K];
  std::int32_t b[K][8];
  std::int32_t c[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const auto& mma = *static_cast<const IntMma<K>*>(lanes[lane]);
    for (int i = 0; i < K / 2; ++i) {
      int row = 0;
      int col = 0;
      a_position<K>(lane, i, row, col);
      a[row][col] = int_of(first.a_type, element(mma.a, i, 8));
    }
    for (int i = 0; i < K / 4; ++i) {
      int row = 0;
      int col = 0;
      b_position<K>(lane, i, row, col);
      b[row][col] = int_of(first.b_type, element(mma.b, i, 8));
    }
    for (int i = 0; i < 4; ++i) {
      c[accumulator_row(lane, i)][accumulator_col(lane, i)] = mma.c->registers[i];
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    auto& mma = *static_cast<IntMma<K>*>(lanes[lane]);
    for (int i = 0; i < 4; ++i) {
      const int row = accumulator_row(lane, i);
      const int col = accumulator_col(lane, i);
      // Wraps modulo 2^32 as the hardware's s32 accumulator does.
      std::uint32_t sum = static_cast<std::uint32_t>(c[row][col]);
      for (int k = 0; k < K; ++k) {
        sum += static_cast<std::uint32_t>(a[row][k] * b[k][col]);
      }
      mma.d->registers[i] = static_cast<std::int32_t>(sum);
    }
  }
}

struct MatrixLoad {
  int matrices;
  bool transpose;
  std::uint32_t* registers;
  const std::byte* row;
};

void complete_ldmatrix(void* const* lanes) {
  const auto& first = *static_cast<const MatrixLoad*>(lanes[0]);
  // matrix m, row r, column c: 16 bits
  std::uint16_t tiles[4][8][8];
  for (int m = 0; m < first.matrices; ++m) {
    for (int r = 0; r < 8; ++r) {
      const auto& load = *static_cast<const MatrixLoad*>(lanes[8 * m + r]);
      std::memcpy(tiles[m][r], load.row, 16);
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    auto& load = *static_cast<MatrixLoad*>(lanes[lane]);
    for (int m = 0; m < first.matrices; ++m) {
      std::uint16_t low = 0;
      std::uint16_t high = 0;
      if (first.transpose) {
        low = tiles[m][lane % 4 * 2][lane / 4];
        high = tiles[m][lane % 4 * 2 + 1][lane / 4];
      } else {
        low = tiles[m][lane / 4][lane % 4 * 2];
        high = tiles[m][lane / 4][lane % 4 * 2 + 1];
      }
      load.registers[m] = static_cast<std::uint32_t>(low) | static_cast<std::uint32_t>(high) << 16;
    }
  }
}

}  // namespace

void mma_float(MmaFloat type, MmaAccF32& d, const MmaA16& a, const MmaB16& b, const MmaAccF32& c,
               std::source_location at) {
  // The result goes to a copy first: d may be c.
  MmaAccF32 result{};
  FloatMma operands{type, &a, &b, &c, &result};
  warp_collective(type == MmaFloat::f16 ? "mma.m16n8k16.f16" : "mma.m16n8k16.bf16", &complete_float,
                  &operands, site_of(at));
  d = result;
}

void mma_int_k32(MmaInt a_type, MmaInt b_type, MmaAccS32& d, const MmaA16& a, const MmaB16& b,
                 const MmaAccS32& c, std::source_location at) {
  MmaAccS32 result{};
  IntMma<32> operands{a_type, b_type, a.registers, b.registers, &c, &result};
  warp_collective("mma.m16n8k32.int8", &complete_int<32>, &operands, site_of(at));
  d = result;
}

void mma_int_k16(MmaInt a_type, MmaInt b_type, MmaAccS32& d, const MmaA8K16& a, const MmaB8K16& b,
                 const MmaAccS32& c, std::source_location at) {
  MmaAccS32 result{};
  IntMma<16> operands{a_type, b_type, a.registers, b.registers, &c, &result};
  warp_collective("mma.m16n8k16.int8", &complete_int<16>, &operands, site_of(at));
  d = result;
}

void ldmatrix(int matrices, bool transpose, std::uint32_t* registers, const std::byte* row,
              std::source_location at) {
  static constexpr const char* kNames[2][5] = {
      {"", "ldmatrix.x1", "ldmatrix.x2", "", "ldmatrix.x4"},
      {"", "ldmatrix.x1.trans", "ldmatrix.x2.trans", "", "ldmatrix.x4.trans"}};
  static constexpr std::byte kZeros[16] = {};
  // A lane whose row failed its checks reads zeros; the launch has failed already.
  const unsigned lane = ::tern::simt::detail::lane_id();
  if (row == nullptr && lane < 8u * static_cast<unsigned>(matrices)) row = kZeros;
  MatrixLoad operands{matrices, transpose, registers, row};
  warp_collective(kNames[transpose ? 1 : 0][matrices], &complete_ldmatrix, &operands, site_of(at));
}

}  // namespace tern::kernels::cuda::emulated
