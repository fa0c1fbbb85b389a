// VNNI kernels for Q8_0 / Q4_0 weights in the 16-row tile layout (q8_tiles.h).
//
// Lane i of every accumulator is row i of the tile. Per block, the 16 scales convert in one
// instruction and each 64-byte vector of values feeds vpdpbusd with a broadcast 4-byte group of
// the activation; the integer sums start from the activation's bias and the float chain is the
// canonical one, so the results equal the row-major kernels' bit for bit. The weights are read
// front to back, one stream, with a software prefetch ahead of it.

// GCC 12 reports the _mm512_undefined_*() placeholders inside its own AVX-512 intrinsics (cvtph)
// as maybe-uninitialized; the warning is a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/cpu/matmul_simd.h"
#include "kernels/cpu/q8_tiles.h"

namespace tern::kernels::detail {
namespace {

constexpr int kMaxTokens = 8;  // tokens per pass over a tile (accumulators in registers)
// Far enough ahead to cover DRAM latency at full bandwidth, near enough to stay in L1: 4 KiB gave
// Q4_0 decode 93-98% of the read bandwidth where 2 KiB gave 87-94% (docs/benchmarks.md).
constexpr std::int64_t kPrefetchBytes = 4096;

template <TensorType kType>
constexpr std::int64_t tile_block_bytes() {
  return kQ8TileRows * Q8Format<kType>::kBlockBytes;
}

// Issues prefetches for [position + kPrefetchBytes) up to `end`, each line once.
class Prefetcher {
 public:
  Prefetcher(const std::byte* start, const std::byte* end) : next_(start), end_(end) {}
  void ahead_of(const std::byte* position) {
    const std::byte* target = std::min(position + kPrefetchBytes, end_);
    for (; next_ < target; next_ += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(next_), _MM_HINT_T0);
    }
  }

 private:
  const std::byte* next_;
  const std::byte* end_;
};

template <TensorType kType>
inline void load_tile_block(const std::byte* p, __m512i w[8]) {
  const std::byte* values = p + 2 * kQ8TileRows;
  if constexpr (kType == TensorType::q8_0) {
    for (int g = 0; g < 8; ++g) w[g] = _mm512_loadu_si512(values + 64 * g);
  } else {
    // The high nibbles stay in place, 16 times their value: one AND instead of a shift and an
    // AND per vector; dot() takes the factor out of their sums.
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    const __m512i high_nibbles = _mm512_set1_epi8(static_cast<char>(0xF0));
    for (int g = 0; g < 4; ++g) {
      const __m512i packed = _mm512_loadu_si512(values + 64 * g);
      w[g] = _mm512_and_si512(packed, low_nibbles);
      w[g + 4] = _mm512_and_si512(packed, high_nibbles);
    }
  }
}

// The block's integer dot products of the 16 rows with one token, plus the activation's bias.
template <TensorType kType>
inline __m512i dot(const __m512i w[8], const Q8Activation& xb) {
  __m512i sums = _mm512_set1_epi32(xb.bias);
  auto group = [&xb](int g) {
    std::int32_t four;
    std::memcpy(&four, xb.qs + 4 * g, 4);
    return _mm512_set1_epi32(four);
  };
  if constexpr (kType == TensorType::q8_0) {
    for (int g = 0; g < 8; ++g) sums = _mm512_dpbusd_epi32(sums, w[g], group(g));
    return sums;
  } else {
    __m512i high = _mm512_setzero_si512();
    for (int g = 0; g < 4; ++g) sums = _mm512_dpbusd_epi32(sums, w[g], group(g));
    for (int g = 4; g < 8; ++g) high = _mm512_dpbusd_epi32(high, w[g], group(g));
    // Every product of a high nibble carries the factor 16, so its sum is a multiple of 16 and
    // the arithmetic shift is exact: the same integers as unpacked nibbles give (240 * 128 still
    // fits vpdpbusd's 16-bit products).
    return _mm512_add_epi32(sums, _mm512_srai_epi32(high, 4));
  }
}

// One tile x T tokens.
template <TensorType kType, int T>
void tile_tokens(const std::byte* tile, std::int64_t blocks, const Q8Activation* const* x,
                 float* const* y, Prefetcher* prefetcher) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::byte* p = tile + b * tile_block_bytes<kType>();
    if (prefetcher) prefetcher->ahead_of(p);
    __m512i w[8];
    load_tile_block<kType>(p, w);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    for (int t = 0; t < T; ++t) {
      const Q8Activation& xb = x[t][b];
      const __m512i sums = dot<kType>(w, xb);
      acc[t] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(d, _mm512_set1_ps(xb.d)), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y[t], acc[t]);
}

template <TensorType kType, int T>
void tile_tokens_at(const KernelArgs& args, std::int64_t row, std::int64_t token,
                    Prefetcher* prefetcher) {
  const Q8Activation* x[T];
  float* y[T];
  for (int t = 0; t < T; ++t) {
    x[t] = reinterpret_cast<const Q8Activation*>(args.act + (token + t) * args.act_stride);
    y[t] = args.y + (token + t) * args.y_stride + row;
  }
  const std::byte* tile = args.w->tiles + row * static_cast<std::int64_t>(args.w->row_bytes);
  tile_tokens<kType, T>(tile, args.w->cols / 32, x, y, prefetcher);
}

template <TensorType kType>
void tile_token_chunk(const KernelArgs& args, std::int64_t row, std::int64_t token, int count,
                      Prefetcher* prefetcher) {
  switch (count) {
    case 1:
      return tile_tokens_at<kType, 1>(args, row, token, prefetcher);
    case 2:
      return tile_tokens_at<kType, 2>(args, row, token, prefetcher);
    case 3:
      return tile_tokens_at<kType, 3>(args, row, token, prefetcher);
    case 4:
      return tile_tokens_at<kType, 4>(args, row, token, prefetcher);
    case 5:
      return tile_tokens_at<kType, 5>(args, row, token, prefetcher);
    case 6:
      return tile_tokens_at<kType, 6>(args, row, token, prefetcher);
    case 7:
      return tile_tokens_at<kType, 7>(args, row, token, prefetcher);
    default:
      return tile_tokens_at<kType, 8>(args, row, token, prefetcher);
  }
}

}  // namespace

template <TensorType kType>
std::int64_t vnni_tiled_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  const WeightMatrix& w = *args.w;
  const std::int64_t end = std::min(row_end, w.tiled_rows);
  if (w.tiles == nullptr || row_begin % kQ8TileRows != 0 || row_begin >= end) return row_begin;
  const auto row_bytes = static_cast<std::int64_t>(w.row_bytes);
  // Ahead into the rows after this claim too: a thread's next claim usually starts there.
  Prefetcher prefetcher(w.tiles + row_begin * row_bytes, w.tiles + w.tiled_rows * row_bytes);
  const std::int64_t chunks = (args.tokens + kMaxTokens - 1) / kMaxTokens;
  std::int64_t r = row_begin;
  for (; r + kQ8TileRows <= end; r += kQ8TileRows) {
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t first = args.tokens * c / chunks;
      const std::int64_t last = args.tokens * (c + 1) / chunks;
      // Later chunks re-read the tile from cache; only the first streams from memory.
      tile_token_chunk<kType>(args, r, first, static_cast<int>(last - first),
                              c == 0 ? &prefetcher : nullptr);
    }
  }
  return r;
}

template std::int64_t vnni_tiled_rows<TensorType::q8_0>(const KernelArgs&, std::int64_t,
                                                        std::int64_t);
template std::int64_t vnni_tiled_rows<TensorType::q4_0>(const KernelArgs&, std::int64_t,
                                                        std::int64_t);

}  // namespace tern::kernels::detail
