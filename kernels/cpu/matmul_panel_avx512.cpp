// VNNI GEMM for Q8_0 / Q4_0 weights: weights repacked so that vector lanes are rows.
//
// A panel holds 32 rows of a thread's range in an order vpdpbusd can use with a broadcast
// activation: per block, eight groups (elements 4g..4g+3) of 32 rows x 4 unsigned bytes (stored
// value + offset), then the 32 row scales as f32. One 4-byte activation broadcast then feeds 16
// rows per instruction, and the panel is reused by every token of the batch. The activation's
// `bias` (-offset * sum) makes the integer dot exact, and the float chain over blocks is the
// canonical one, so the results match the GEMV kernel bit for bit.

// GCC 12 reports the _mm512_undefined_*() placeholders inside its own AVX-512 intrinsics (gather,
// cvtph, cvtepi32_epi16) as maybe-uninitialized; the warning is a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/cpu/matmul_simd.h"

namespace tern::kernels::detail {
namespace {

constexpr std::int64_t kPanelRows = 32;
constexpr std::int64_t kPanelBlockBytes = 8 * kPanelRows * 4 + kPanelRows * 4;  // 1152
constexpr std::int64_t kScalesOffset = 8 * kPanelRows * 4;
constexpr int kTileTokens = 4;
// Below this many tokens repacking (gathers) costs more than it saves, measured on Zen 4; the
// GEMV kernel runs instead.
constexpr std::int64_t kMinPanelTokens = 8;

template <TensorType kType>
void repack_panel(const std::byte* row0, std::int64_t row_bytes, std::int64_t blocks,
                  std::byte* panel) {
  constexpr std::int64_t kBlockBytes = Q8Format<kType>::kBlockBytes;
  const __m512i offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(row_bytes)));
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  for (std::int64_t b = 0; b < blocks; ++b) {
    std::byte* dst = panel + b * kPanelBlockBytes;
    for (int half = 0; half < 2; ++half) {
      const std::byte* first = row0 + 16 * half * row_bytes + b * kBlockBytes;
      // Each gathered word starts with the block's f16 scale.
      const __m512i words = _mm512_i32gather_epi32(offsets, first, 1);
      _mm512_store_ps(dst + kScalesOffset + 64 * half,
                      _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words)));
      if constexpr (kType == TensorType::q8_0) {
        for (int g = 0; g < 8; ++g) {
          const __m512i w = _mm512_i32gather_epi32(offsets, first + 2 + 4 * g, 1);
          _mm512_store_si512(dst + 128 * g + 64 * half,
                             _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80))));
        }
      } else {
        // Bytes 4g..4g+3 hold elements 4g.. in their low nibbles and 16 + 4g.. in the high ones.
        for (int g = 0; g < 4; ++g) {
          const __m512i w = _mm512_i32gather_epi32(offsets, first + 2 + 4 * g, 1);
          _mm512_store_si512(dst + 128 * g + 64 * half, _mm512_and_si512(w, low_nibbles));
          _mm512_store_si512(dst + 128 * (g + 4) + 64 * half,
                             _mm512_and_si512(_mm512_srli_epi32(w, 4), low_nibbles));
        }
      }
    }
  }
}

// 32 rows x T tokens; lane i of acc[h][t] is row 16h + i.
template <int T>
void panel_tile(const std::byte* panel, std::int64_t blocks, const Q8Activation* const* x,
                float* const* y) {
  __m512 acc[2][T];
  for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = _mm512_setzero_ps();
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::byte* p = panel + b * kPanelBlockBytes;
    __m512i sums[2][T];
    for (int t = 0; t < T; ++t) sums[0][t] = sums[1][t] = _mm512_set1_epi32(x[t][b].bias);
    for (int g = 0; g < 8; ++g) {
      const __m512i w0 = _mm512_load_si512(p + 128 * g);
      const __m512i w1 = _mm512_load_si512(p + 128 * g + 64);
      for (int t = 0; t < T; ++t) {
        std::int32_t four;
        std::memcpy(&four, x[t][b].qs + 4 * g, 4);
        const __m512i xb = _mm512_set1_epi32(four);
        sums[0][t] = _mm512_dpbusd_epi32(sums[0][t], w0, xb);
        sums[1][t] = _mm512_dpbusd_epi32(sums[1][t], w1, xb);
      }
    }
    const __m512 d0 = _mm512_load_ps(p + kScalesOffset);
    const __m512 d1 = _mm512_load_ps(p + kScalesOffset + 64);
    for (int t = 0; t < T; ++t) {
      const __m512 dx = _mm512_set1_ps(x[t][b].d);
      acc[0][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[0][t]), _mm512_mul_ps(d0, dx), acc[0][t]);
      acc[1][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[1][t]), _mm512_mul_ps(d1, dx), acc[1][t]);
    }
  }
  for (int t = 0; t < T; ++t) {
    _mm512_storeu_ps(y[t], acc[0][t]);
    _mm512_storeu_ps(y[t] + 16, acc[1][t]);
  }
}

template <int T>
void panel_tile_at(const KernelArgs& args, std::int64_t blocks, std::int64_t row,
                   std::int64_t token) {
  const Q8Activation* x[T];
  float* y[T];
  for (int t = 0; t < T; ++t) {
    x[t] = reinterpret_cast<const Q8Activation*>(args.act + (token + t) * args.act_stride);
    y[t] = args.y + (token + t) * args.y_stride + row;
  }
  panel_tile<T>(args.scratch, blocks, x, y);
}

template <TensorType kType>
void panel_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  const std::int64_t blocks = args.w->cols / 32;
  if (args.tokens < kMinPanelTokens ||
      args.scratch_bytes < static_cast<std::size_t>(blocks * kPanelBlockBytes)) {
    return q8_rows<VnniDot, kType>(args, row_begin, row_end);
  }
  const auto row_bytes = static_cast<std::int64_t>(args.w->row_bytes);
  const auto* base = static_cast<const std::byte*>(args.w->data);
  std::int64_t r = row_begin;
  for (; r + kPanelRows <= row_end; r += kPanelRows) {
    repack_panel<kType>(base + r * row_bytes, row_bytes, blocks, args.scratch);
    std::int64_t t = 0;
    for (; t + kTileTokens <= args.tokens; t += kTileTokens) {
      panel_tile_at<kTileTokens>(args, blocks, r, t);
    }
    switch (args.tokens - t) {
      case 3:
        panel_tile_at<3>(args, blocks, r, t);
        break;
      case 2:
        panel_tile_at<2>(args, blocks, r, t);
        break;
      case 1:
        panel_tile_at<1>(args, blocks, r, t);
        break;
      default:
        break;
    }
  }
  if (r < row_end) q8_rows<VnniDot, kType>(args, r, row_end);
}

}  // namespace

void vnni_panel_rows_q8_0(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  panel_rows<TensorType::q8_0>(args, row_begin, row_end);
}

void vnni_panel_rows_q4_0(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  panel_rows<TensorType::q4_0>(args, row_begin, row_end);
}

std::size_t vnni_panel_scratch_bytes(std::int64_t cols) {
  return static_cast<std::size_t>(cols / 32 * kPanelBlockBytes);
}

}  // namespace tern::kernels::detail
