#pragma once

// The contract between matmul() and its per-instruction-set kernels. Not part of the public API.
//
// Canonical arithmetic (what makes results batch-invariant): for quantized weights each output
// element is a chain over blocks in order, acc = fma(float(exact integer block dot), w_scale *
// x_scale, acc), starting from +0, so any register tiling that computes the integer dots exactly
// gives the same bits. Q4_K adds a second fma per super-block for the mins. Float weights use a
// per-Isa fixed lane layout over k, two accumulators taking the k chunks in turn, and a fixed
// reduction. Every kernel of one Isa
// follows the same recipe for GEMV rows, GEMM tiles and leftovers.

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_blocks.h"

namespace tern::kernels::detail {

// A 32-value activation block for Q8_0 and Q4_0 weights. The scale stays f32 (llama.cpp rounds it
// to f16), and `bias` = -offset * sum(qs) lets a kernel multiply unsigned weight bytes (stored
// value + offset: 128 for Q8_0, 8 for Q4_0) and still get the exact signed dot.
struct Q8Activation {
  std::int8_t qs[32];
  float d;
  std::int32_t bias;
};
static_assert(sizeof(Q8Activation) == 40);

inline constexpr int kQ8_0Offset = 128;
inline constexpr int kQ4_0Offset = 8;

enum class ActivationKind { f32, q8, q8_k };

inline ActivationKind activation_kind(TensorType type) {
  switch (type) {
    case TensorType::q8_0:
    case TensorType::q4_0:
      return ActivationKind::q8;
    case TensorType::q4_k:
    case TensorType::q6_k:
      return ActivationKind::q8_k;
    default:
      return ActivationKind::f32;
  }
}

struct KernelArgs {
  const WeightMatrix* w;
  const std::byte* act;     // Q8Activation / BlockQ8K rows, or the f32 x
  std::int64_t act_stride;  // bytes between token rows
  std::int64_t tokens;
  float* y;
  std::int64_t y_stride;  // floats
  std::byte* scratch;     // this thread's
  std::size_t scratch_bytes;
};

// Computes y for rows [row_begin, row_end) and all args.tokens.
using RowsKernel = void (*)(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end);
using QuantizeQ8 = void (*)(const float* x, std::int64_t cols, Q8Activation* dst, int offset);
using QuantizeQ8K = void (*)(const float* x, std::int64_t cols, BlockQ8K* dst);

struct KernelTable {
  QuantizeQ8 quantize_q8;
  QuantizeQ8K quantize_q8_k;
  RowsKernel f32;
  RowsKernel f16;
  RowsKernel bf16;
  RowsKernel q8_0;
  RowsKernel q4_0;
  RowsKernel q4_k;
  RowsKernel q6_k;
  // Scratch bytes per thread for a matrix of `cols` columns.
  std::size_t (*scratch_bytes)(std::int64_t cols);
};

// The VNNI kernels for Q8_0 / Q4_0 (matmul_panel_avx512.cpp): a GEMM over repacked weight panels
// for large batches, and below a few dozen tokens 16-row tiles transposed in registers.
void vnni_panel_rows_q8_0(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end);
void vnni_panel_rows_q4_0(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end);
std::size_t vnni_panel_scratch_bytes(std::int64_t cols);

// The VNNI kernel for rows held in the 16-row tile layout (matmul_tiles_avx512.cpp): computes the
// tiled rows of [row_begin, row_end) from row_begin on (nothing unless w->tiles is set and
// row_begin is a tile boundary) and returns the first row it left to the row-major kernels.
template <TensorType kType>
std::int64_t vnni_tiled_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end);

const KernelTable& scalar_kernels();
const KernelTable& avx2_kernels();
const KernelTable& avx512_kernels();
const KernelTable& avx512_vnni_kernels();

}  // namespace tern::kernels::detail
