// VNNI GEMM for Q8_0 / Q4_0 weights: weights repacked so that vector lanes are rows.
//
// A panel holds 32 rows of a thread's range in an order vpdpbusd can use with a broadcast
// activation: per block, eight groups (elements 4g..4g+3) of 32 rows x 4 unsigned bytes (stored
// value + offset), then the 32 row scales as f32. One 4-byte activation broadcast then feeds 16
// rows per instruction, and the panel is reused by every token of the batch. The activation's
// `bias` (-offset * sum) makes the integer dot exact, and the float chain over blocks is the
// canonical one, so the results match the GEMV kernel bit for bit.
//
// Small batches (decode) skip the panel: each block of 16 rows is transposed into the same lane
// order in registers and dotted with every token of the batch (up to eight at a time) before the
// next block is loaded, so the weights are read from memory once per call.

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
// Below this many tokens repacking (gathers) costs more than it saves, measured on Zen 4
// (2048 x 2048, one thread: the small-batch kernel wins at 32 tokens, the panel at 64); the
// small-batch kernel below runs instead, for a single token too.
constexpr std::int64_t kMinPanelTokens = 40;

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

// ---- small batches: 16 rows transposed in registers, block by block, no repacked panel

constexpr std::int64_t kTileRows = 16;
constexpr int kMaxTileTokens = 8;

// One block of 16 consecutive rows (`block0` is row 0's block) in the panel's lane order: w[g]
// lane i holds row i's unsigned bytes for elements 4g..4g+3 (Q8_0: stored value + 128; Q4_0:
// nibbles, elements 16.. in w[4..7] to match the activation's order).
template <TensorType kType>
inline void transpose_block16(const std::byte* block0, std::int64_t row_bytes, __m512i w[8]) {
  const std::byte* q = block0 + 2;
  if constexpr (kType == TensorType::q8_0) {
    __m512i z[8];  // rows i and i + 8
    for (int i = 0; i < 8; ++i) {
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + i * row_bytes));
      const __m256i hi =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + (i + 8) * row_bytes));
      z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    // Per 128-bit lane, dwords of rows 4h..4h+3 (+8 in the upper half), as in an 8x8 transpose.
    const __m512i lo_words = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i hi_words = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512i u[2][4];
    for (int h = 0; h < 2; ++h) {
      const __m512i t0 = _mm512_unpacklo_epi32(z[4 * h], z[4 * h + 1]);
      const __m512i t1 = _mm512_unpackhi_epi32(z[4 * h], z[4 * h + 1]);
      const __m512i t2 = _mm512_unpacklo_epi32(z[4 * h + 2], z[4 * h + 3]);
      const __m512i t3 = _mm512_unpackhi_epi32(z[4 * h + 2], z[4 * h + 3]);
      u[h][0] = _mm512_unpacklo_epi64(t0, t2);
      u[h][1] = _mm512_unpackhi_epi64(t0, t2);
      u[h][2] = _mm512_unpacklo_epi64(t1, t3);
      u[h][3] = _mm512_unpackhi_epi64(t1, t3);
    }
    for (int g = 0; g < 4; ++g) {
      w[g] = _mm512_xor_si512(_mm512_permutex2var_epi64(u[0][g], lo_words, u[1][g]), flip);
      w[g + 4] = _mm512_xor_si512(_mm512_permutex2var_epi64(u[0][g], hi_words, u[1][g]), flip);
    }
  } else {
    __m512i z[4];  // rows j, j + 4, j + 8, j + 12
    for (int j = 0; j < 4; ++j) {
      const auto row = [&](int i) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i * row_bytes));
      };
      z[j] = _mm512_inserti32x4(
          _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(row(j)), row(j + 4), 1),
                             row(j + 8), 2),
          row(j + 12), 3);
    }
    const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]);
    const __m512i t1 = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]);
    const __m512i t3 = _mm512_unpackhi_epi32(z[2], z[3]);
    const __m512i u[4] = {_mm512_unpacklo_epi64(t0, t2), _mm512_unpackhi_epi64(t0, t2),
                          _mm512_unpacklo_epi64(t1, t3), _mm512_unpackhi_epi64(t1, t3)};
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    for (int g = 0; g < 4; ++g) {
      w[g] = _mm512_and_si512(u[g], low_nibbles);
      w[g + 4] = _mm512_and_si512(_mm512_srli_epi32(u[g], 4), low_nibbles);
    }
  }
}

// 16 rows x T tokens; lane i of acc[t] is row i. The same integer sums and float chain as
// panel_tile. `prefetch` (may be null) is the next tile, pulled in evenly over the blocks.
template <TensorType kType, int T>
void small_tile(const std::byte* row0, std::int64_t row_bytes, std::int64_t blocks,
                const Q8Activation* const* x, float* const* y, const std::byte* prefetch) {
  constexpr std::int64_t kBlockBytes = Q8Format<kType>::kBlockBytes;
  const __m512i offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(row_bytes)));
  const std::int64_t prefetch_bytes = prefetch ? kTileRows * row_bytes : 0;
  std::int64_t prefetched = 0;
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (std::int64_t b = 0; b < blocks; ++b) {
    for (const std::int64_t target = (b + 1) * prefetch_bytes / blocks; prefetched < target;
         prefetched += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(prefetch + prefetched), _MM_HINT_T0);
    }
    const std::byte* block0 = row0 + b * kBlockBytes;
    __m512i w[8];
    transpose_block16<kType>(block0, row_bytes, w);
    // Each gathered word starts with the block's f16 scale.
    const __m512 d =
        _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(offsets, block0, 1)));
    for (int t = 0; t < T; ++t) {
      const Q8Activation& xb = x[t][b];
      __m512i sums = _mm512_set1_epi32(xb.bias);
      for (int g = 0; g < 8; ++g) {
        std::int32_t four;
        std::memcpy(&four, xb.qs + 4 * g, 4);
        sums = _mm512_dpbusd_epi32(sums, w[g], _mm512_set1_epi32(four));
      }
      acc[t] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(d, _mm512_set1_ps(xb.d)), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y[t], acc[t]);
}

template <TensorType kType, int T>
void small_tile_at(const KernelArgs& args, std::int64_t row, std::int64_t token,
                   const std::byte* prefetch) {
  const Q8Activation* x[T];
  float* y[T];
  for (int t = 0; t < T; ++t) {
    x[t] = reinterpret_cast<const Q8Activation*>(args.act + (token + t) * args.act_stride);
    y[t] = args.y + (token + t) * args.y_stride + row;
  }
  const auto row_bytes = static_cast<std::int64_t>(args.w->row_bytes);
  small_tile<kType, T>(static_cast<const std::byte*>(args.w->data) + row * row_bytes, row_bytes,
                       args.w->cols / 32, x, y, prefetch);
}

template <TensorType kType>
void small_tile_tokens(const KernelArgs& args, std::int64_t row, std::int64_t token, int count,
                       const std::byte* prefetch) {
  switch (count) {
    case 1:
      return small_tile_at<kType, 1>(args, row, token, prefetch);
    case 2:
      return small_tile_at<kType, 2>(args, row, token, prefetch);
    case 3:
      return small_tile_at<kType, 3>(args, row, token, prefetch);
    case 4:
      return small_tile_at<kType, 4>(args, row, token, prefetch);
    case 5:
      return small_tile_at<kType, 5>(args, row, token, prefetch);
    case 6:
      return small_tile_at<kType, 6>(args, row, token, prefetch);
    case 7:
      return small_tile_at<kType, 7>(args, row, token, prefetch);
    default:
      return small_tile_at<kType, 8>(args, row, token, prefetch);
  }
}

// Tiles of 16 rows; the tokens in even chunks of at most kMaxTileTokens, each chunk re-reading
// the tile's weights from cache. Leftover rows take the eight-row kernel.
template <TensorType kType>
void small_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  const auto row_bytes = static_cast<std::int64_t>(args.w->row_bytes);
  const auto* base = static_cast<const std::byte*>(args.w->data);
  const std::int64_t chunks = (args.tokens + kMaxTileTokens - 1) / kMaxTileTokens;
  std::int64_t r = row_begin;
  for (; r + kTileRows <= row_end; r += kTileRows) {
    const std::byte* next =
        r + 2 * kTileRows <= row_end ? base + (r + kTileRows) * row_bytes : nullptr;
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t begin = args.tokens * c / chunks;
      const std::int64_t end = args.tokens * (c + 1) / chunks;
      small_tile_tokens<kType>(args, r, begin, static_cast<int>(end - begin),
                               c == 0 ? next : nullptr);
    }
  }
  if (r < row_end) q8_rows<VnniDot, kType>(args, r, row_end);
}

template <TensorType kType>
void panel_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  row_begin = vnni_tiled_rows<kType>(args, row_begin, row_end);
  if (row_begin >= row_end) return;
  const std::int64_t blocks = args.w->cols / 32;
  if (args.tokens < kMinPanelTokens ||
      args.scratch_bytes < static_cast<std::size_t>(blocks * kPanelBlockBytes)) {
    return small_rows<kType>(args, row_begin, row_end);
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
