// The AVX-512 variants of the matmul kernels: without VNNI (AVX-512 BW/VL) and with VNNI.

// GCC 12 reports the _mm512_undefined_*() placeholders inside its own AVX-512 intrinsics (cvtph,
// cvtepu16, extract) as uninitialized; the warning is a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/cpu/matmul_simd.h"

namespace tern::kernels::detail {
namespace {

std::size_t no_scratch(std::int64_t) {
  return 0;
}

}  // namespace

const KernelTable& avx512_kernels() {
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

const KernelTable& avx512_vnni_kernels() {
  static constexpr KernelTable table{
      simd_quantize_q8,     simd_quantize_q8_k,       float_rows<LoadF32>,  float_rows<LoadF16>,
      float_rows<LoadBf16>, vnni_panel_rows_q8_0,     vnni_panel_rows_q4_0, k_quant_rows<Q4KDot>,
      k_quant_rows<Q6KDot>, vnni_panel_scratch_bytes,
  };
  return table;
}

}  // namespace tern::kernels::detail
