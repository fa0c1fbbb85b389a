// The AVX2 + FMA + F16C variant of the matmul kernels.

#include "kernels/cpu/matmul_simd.h"

namespace tern::kernels::detail {
namespace {

std::size_t no_scratch(std::int64_t) {
  return 0;
}

}  // namespace

const KernelTable& avx2_kernels() {
  static constexpr KernelTable table{
      simd_quantize_q8,
      simd_quantize_q8_k,
      float_rows<LoadF32>,
      float_rows<LoadF16>,
      float_rows<LoadBf16>,
      q8_rows<MaddubsDot, TensorType::q8_0>,
      q8_rows<MaddubsDot, TensorType::q4_0>,
      k_quant_rows<Q4KDot>,
      k_quant_rows<Q6KDot>,
      no_scratch,
  };
  return table;
}

}  // namespace tern::kernels::detail
