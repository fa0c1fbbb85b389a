#pragma once

// Matmul kernels written with 256-bit AVX2 intrinsics, shared by matmul_avx2.cpp and
// matmul_avx512.cpp. Every definition has internal linkage on purpose: each including file is
// compiled with different -m flags, and a shared (inline, external) definition could be merged by
// the linker into the copy built with instructions the running CPU lacks.
//
// `Dot` supplies the unsigned-by-signed byte dot product: pmaddubsw + pmaddwd on AVX2, vpdpbusd
// with VNNI. The integer results are exact either way, so only the float steps (fixed below)
// decide the bits of the output.

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "kernels/cpu/matmul_kernels.h"

namespace tern::kernels::detail {
namespace {  // NOLINT(google-build-namespaces): see above

// pmaddubsw saturates pairs at 32767; all callers keep |u * s| pair sums below that.
struct MaddubsDot {
  static __m256i dot(__m256i acc, __m256i u, __m256i s) {
    const __m256i pairs = _mm256_maddubs_epi16(u, s);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
};

#if defined(__AVX512VNNI__)
struct VnniDot {
  static __m256i dot(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
};
#endif

// Not half.h: its inline functions have external linkage, and a copy compiled here could be
// the one the linker keeps for baseline callers. F16C converts exactly, with the same results.
inline float simd_half_to_float(std::uint16_t bits) {
  return _cvtsh_ss(bits);
}
inline float simd_bf16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// The float reduction every 8-lane float kernel ends with: (lo + hi) halves, then pairs.
inline float hsum_f32(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax_f32(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lane i of the result is the sum of all lanes of p[i].
inline __m256i transpose_sum8(const __m256i p[8]) {
  const __m256i t0 = _mm256_hadd_epi32(p[0], p[1]);
  const __m256i t1 = _mm256_hadd_epi32(p[2], p[3]);
  const __m256i t2 = _mm256_hadd_epi32(p[4], p[5]);
  const __m256i t3 = _mm256_hadd_epi32(p[6], p[7]);
  const __m256i u0 = _mm256_hadd_epi32(t0, t1);  // rows 0-3: low halves | high halves
  const __m256i u1 = _mm256_hadd_epi32(t2, t3);  // rows 4-7
  return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
                          _mm256_permute2x128_si256(u0, u1, 0x31));
}

inline __m256 abs_ps(__m256 v) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

// 32 int32 (four vectors, in order) to 32 int8.
inline __m256i pack_i32_to_i8(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
  return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// ---- activation quantization (same rounding as the scalar reference: x * (1 / d), nearest even)

inline void simd_quantize_q8(const float* x, std::int64_t cols, Q8Activation* dst, int offset) {
  for (std::int64_t b = 0; b < cols / 32; ++b) {
    const float* v = x + b * 32;
    __m256 values[4];
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      values[i] = _mm256_loadu_ps(v + 8 * i);
      amax = _mm256_max_ps(amax, abs_ps(values[i]));
    }
    const float d = hmax_f32(amax) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(values[i], id));
    const int sum =
        hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst[b].qs),
                        pack_i32_to_i8(q[0], q[1], q[2], q[3]));
    dst[b].d = d;
    dst[b].bias = -offset * sum;
  }
}

inline void simd_quantize_q8_k(const float* x, std::int64_t cols, BlockQ8K* dst) {
  for (std::int64_t b = 0; b < cols / 256; ++b) {
    const float* v = x + b * 256;
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 32; ++i) amax = _mm256_max_ps(amax, abs_ps(_mm256_loadu_ps(v + 8 * i)));
    const float d = hmax_f32(amax) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    for (int g = 0; g < 8; ++g) {
      __m256i q[4];
      for (int i = 0; i < 4; ++i) {
        q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + 32 * g + 8 * i), id));
      }
      dst[b].bsums[2 * g] = static_cast<std::int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      dst[b].bsums[2 * g + 1] = static_cast<std::int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst[b].qs + 32 * g),
                          pack_i32_to_i8(q[0], q[1], q[2], q[3]));
    }
    dst[b].d = d;
  }
}

// ---- Q8_0 / Q4_0 weights with Q8Activation

template <TensorType kType>
struct Q8Format;
template <>
struct Q8Format<TensorType::q8_0> {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ8_0);
};
template <>
struct Q8Format<TensorType::q4_0> {
  static constexpr std::int64_t kBlockBytes = sizeof(BlockQ4_0);
};

// A weight block's 32 values as the unsigned operand of the byte dot: Q8_0 keeps its signed bytes
// (block_dot_prepared applies their signs to x), Q4_0 unpacks its nibbles (stored value + 8).
template <TensorType kType>
inline __m256i load_weights(const std::byte* block) {
  if constexpr (kType == TensorType::q8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
  } else {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
  }
}

// The exact integer dot of one weight block (from load_weights) with one activation block, in 8
// int32 lanes (plus the offset correction for Q4_0, applied by the caller).
template <class Dot, TensorType kType>
inline __m256i block_dot_prepared(__m256i w, __m256i xq) {
  if constexpr (kType == TensorType::q8_0) {
    // |w| <= 128 as unsigned bytes, and x carries w's sign: the products keep their value.
    return Dot::dot(_mm256_setzero_si256(), _mm256_sign_epi8(w, w), _mm256_sign_epi8(xq, w));
  } else {
    return Dot::dot(_mm256_setzero_si256(), w, xq);
  }
}

template <class Dot, TensorType kType>
inline __m256i block_dot(const std::byte* block, __m256i xq) {
  return block_dot_prepared<Dot, kType>(load_weights<kType>(block), xq);
}

template <TensorType kType>
inline int block_bias(const Q8Activation& x) {
  return kType == TensorType::q4_0 ? x.bias : 0;
}

// Eight half-float scales, one at the start of each of eight blocks `stride` bytes apart.
inline __m256 gather_scales8(const std::byte* first, __m256i offsets) {
  const __m256i words = _mm256_i32gather_epi32(reinterpret_cast<const int*>(first), offsets, 1);
  const __m256i halves = _mm256_shuffle_epi8(
      words, _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5,
                              8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1));
  const __m128i packed = _mm256_castsi256_si128(_mm256_permute4x64_epi64(halves, 0x08));
  return _mm256_cvtph_ps(packed);
}

inline float half_scale(const std::byte* block) {
  std::uint16_t bits;
  std::memcpy(&bits, block, 2);
  return simd_half_to_float(bits);
}

// Eight consecutive rows for T tokens; lane i of a token's accumulator is row i. Each block of
// the eight rows is loaded once and dotted with every token's activation block. `prefetch` (may
// be null) is the next group's memory, pulled in evenly while this group computes: each group is
// only a few KB, too short for the hardware prefetcher to lock on to eight row streams.
template <class Dot, TensorType kType, int T>
void q8_rows8(const std::byte* row0, std::int64_t row_bytes, const Q8Activation* const* x,
              std::int64_t blocks, float* const* y, const std::byte* prefetch) {
  constexpr std::int64_t kBlockBytes = Q8Format<kType>::kBlockBytes;
  const auto rb = static_cast<int>(row_bytes);
  const __m256i offsets = _mm256_setr_epi32(0, rb, 2 * rb, 3 * rb, 4 * rb, 5 * rb, 6 * rb, 7 * rb);
  const std::int64_t prefetch_bytes = prefetch ? 8 * row_bytes : 0;
  std::int64_t prefetched = 0;
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < blocks; ++b) {
    for (const std::int64_t target = (b + 1) * prefetch_bytes / blocks; prefetched < target;
         prefetched += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(prefetch + prefetched), _MM_HINT_T0);
    }
    const std::byte* column = row0 + b * kBlockBytes;
    __m256i weights[8];
    for (int i = 0; i < 8; ++i) weights[i] = load_weights<kType>(column + i * row_bytes);
    const __m256 weight_scales = gather_scales8(column, offsets);
    for (int t = 0; t < T; ++t) {
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t][b].qs));
      __m256i partial[8];
      for (int i = 0; i < 8; ++i) partial[i] = block_dot_prepared<Dot, kType>(weights[i], xq);
      const __m256i sums =
          _mm256_add_epi32(transpose_sum8(partial), _mm256_set1_epi32(block_bias<kType>(x[t][b])));
      const __m256 scale = _mm256_mul_ps(weight_scales, _mm256_set1_ps(x[t][b].d));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(y[t], acc[t]);
}

template <class Dot, TensorType kType>
float q8_row1(const std::byte* row, const Q8Activation* x, std::int64_t blocks) {
  constexpr std::int64_t kBlockBytes = Q8Format<kType>::kBlockBytes;
  float acc = 0.0f;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::byte* block = row + b * kBlockBytes;
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
    const int sum = hsum_i32(block_dot<Dot, kType>(block, xq)) + block_bias<kType>(x[b]);
    acc = std::fma(static_cast<float>(sum), half_scale(block) * x[b].d, acc);
  }
  return acc;
}

// Tokens [token, token + T) of one eight-row group.
template <class Dot, TensorType kType, int T>
void q8_rows8_at(const KernelArgs& args, std::int64_t row, std::int64_t token,
                 const std::byte* prefetch) {
  const Q8Activation* x[T];
  float* y[T];
  for (int t = 0; t < T; ++t) {
    x[t] = reinterpret_cast<const Q8Activation*>(args.act + (token + t) * args.act_stride);
    y[t] = args.y + (token + t) * args.y_stride + row;
  }
  const auto row_bytes = static_cast<std::int64_t>(args.w->row_bytes);
  q8_rows8<Dot, kType, T>(static_cast<const std::byte*>(args.w->data) + row * row_bytes, row_bytes,
                          x, args.w->cols / 32, y, prefetch);
}

// Rows in groups of eight, tokens in chunks of up to four; each group's weights are read from
// memory once and stay in L1/L2 while the later chunks stream past.
template <class Dot, TensorType kType>
void q8_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  constexpr std::int64_t kChunk = 4;
  const std::int64_t blocks = args.w->cols / 32;
  const auto row_bytes = static_cast<std::int64_t>(args.w->row_bytes);
  const auto* base = static_cast<const std::byte*>(args.w->data);
  std::int64_t r = row_begin;
  for (; r + 8 <= row_end; r += 8) {
    const std::byte* next = r + 16 <= row_end ? base + (r + 8) * row_bytes : nullptr;
    for (std::int64_t t = 0; t < args.tokens; t += kChunk) {
      const std::byte* prefetch = t == 0 ? next : nullptr;
      switch (std::min(kChunk, args.tokens - t)) {
        case 1:
          q8_rows8_at<Dot, kType, 1>(args, r, t, prefetch);
          break;
        case 2:
          q8_rows8_at<Dot, kType, 2>(args, r, t, prefetch);
          break;
        case 3:
          q8_rows8_at<Dot, kType, 3>(args, r, t, prefetch);
          break;
        default:
          q8_rows8_at<Dot, kType, 4>(args, r, t, prefetch);
          break;
      }
    }
  }
  for (; r < row_end; ++r) {
    for (std::int64_t t = 0; t < args.tokens; ++t) {
      const auto* x = reinterpret_cast<const Q8Activation*>(args.act + t * args.act_stride);
      args.y[t * args.y_stride + r] = q8_row1<Dot, kType>(base + r * row_bytes, x, blocks);
    }
  }
}

// ---- K-quants with Q8_K activations: one row at a time for T tokens, integer sums per
// super-block. Each super-block is unpacked once and dotted with every token's block.

template <int T>
void q4_k_dot(const BlockQ4K* w, const BlockQ8K* const* x, std::int64_t blocks, float* out) {
  const __m256i low_mask = _mm256_set1_epi8(0x0F);
  float acc[T];
  for (int t = 0; t < T; ++t) acc[t] = 0.0f;
  for (std::int64_t b = 0; b < blocks; ++b) {
    int scales[8], mins[8];
    for (int j = 0; j < 8; ++j) q4_k_scale_min(j, w[b].scales, scales[j], mins[j]);
    __m256i nibbles[8];  // sub-block j's 32 values
    for (int c = 0; c < 4; ++c) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs + 32 * c));
      nibbles[2 * c] = _mm256_and_si256(q, low_mask);
      nibbles[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low_mask);
    }
    const float d = simd_half_to_float(w[b].d);
    const float dmin = simd_half_to_float(w[b].dmin);
    for (int t = 0; t < T; ++t) {
      const BlockQ8K& xb = x[t][b];
      int min_sum = 0;
      for (int j = 0; j < 8; ++j) min_sum += mins[j] * (xb.bsums[2 * j] + xb.bsums[2 * j + 1]);
      __m256i sum = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs + 32 * j));
        // Pairs stay below 2 * 15 * 127; scaled by <= 63 they fit int32 easily.
        sum = _mm256_add_epi32(sum,
                               _mm256_madd_epi16(_mm256_maddubs_epi16(nibbles[j], xq),
                                                 _mm256_set1_epi16(static_cast<short>(scales[j]))));
      }
      acc[t] = std::fma(static_cast<float>(hsum_i32(sum)), d * xb.d, acc[t]);
      acc[t] = std::fma(static_cast<float>(min_sum), -(dmin * xb.d), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = acc[t];
}

template <int T>
void q6_k_dot(const BlockQ6K* w, const BlockQ8K* const* x, std::int64_t blocks, float* out) {
  const __m256i low_mask = _mm256_set1_epi8(0x0F);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  float acc[T];
  for (int t = 0; t < T; ++t) acc[t] = 0.0f;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int8_t* scales = w[b].scales;
    __m256i values[8];  // elements 32i .. 32i + 31, 0..63
    __m256i pair_scales[8];
    for (int n = 0; n < 2; ++n) {
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qh + 32 * n));
      const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].ql + 64 * n));
      const __m256i ql1 =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].ql + 64 * n + 32));
      const __m256i lows[4] = {_mm256_and_si256(ql0, low_mask), _mm256_and_si256(ql1, low_mask),
                               _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low_mask),
                               _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low_mask)};
      for (int k = 0; k < 4; ++k) {
        const __m256i high = _mm256_slli_epi16(
            _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), two_bits), 4);
        values[4 * n + k] = _mm256_or_si256(lows[k], high);
        const int j = 8 * n + 2 * k;
        pair_scales[4 * n + k] =
            _mm256_set_m128i(_mm_set1_epi16(scales[j + 1]), _mm_set1_epi16(scales[j]));
      }
    }
    const float d = simd_half_to_float(w[b].d);
    for (int t = 0; t < T; ++t) {
      const BlockQ8K& xb = x[t][b];
      int offset_sum = 0;
      for (int j = 0; j < 16; ++j) offset_sum += scales[j] * xb.bsums[j];
      __m256i sum = _mm256_setzero_si256();
      for (int i = 0; i < 8; ++i) {
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs + 32 * i));
        sum = _mm256_add_epi32(
            sum, _mm256_madd_epi16(_mm256_maddubs_epi16(values[i], xq), pair_scales[i]));
      }
      const int total = hsum_i32(sum) - 32 * offset_sum;
      acc[t] = std::fma(static_cast<float>(total), d * xb.d, acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = acc[t];
}

struct Q4KDot {
  using Block = BlockQ4K;
  template <int T>
  static void dot(const Block* w, const BlockQ8K* const* x, std::int64_t blocks, float* out) {
    q4_k_dot<T>(w, x, blocks, out);
  }
};
struct Q6KDot {
  using Block = BlockQ6K;
  template <int T>
  static void dot(const Block* w, const BlockQ8K* const* x, std::int64_t blocks, float* out) {
    q6_k_dot<T>(w, x, blocks, out);
  }
};

template <class Kind, int T>
void k_quant_row_at(const KernelArgs& args, std::int64_t row, std::int64_t token) {
  const BlockQ8K* x[T];
  for (int t = 0; t < T; ++t)
    x[t] = reinterpret_cast<const BlockQ8K*>(args.act + (token + t) * args.act_stride);
  const auto* w = reinterpret_cast<const typename Kind::Block*>(
      static_cast<const std::byte*>(args.w->data) +
      row * static_cast<std::int64_t>(args.w->row_bytes));
  float out[T];
  Kind::template dot<T>(w, x, args.w->cols / 256, out);
  for (int t = 0; t < T; ++t) args.y[(token + t) * args.y_stride + row] = out[t];
}

// A row at a time, tokens in chunks of up to four; the row stays in L1 across the chunks.
template <class Kind>
void k_quant_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  constexpr std::int64_t kChunk = 4;
  for (std::int64_t r = row_begin; r < row_end; ++r) {
    for (std::int64_t t = 0; t < args.tokens; t += kChunk) {
      switch (std::min(kChunk, args.tokens - t)) {
        case 1:
          k_quant_row_at<Kind, 1>(args, r, t);
          break;
        case 2:
          k_quant_row_at<Kind, 2>(args, r, t);
          break;
        case 3:
          k_quant_row_at<Kind, 3>(args, r, t);
          break;
        default:
          k_quant_row_at<Kind, 4>(args, r, t);
          break;
      }
    }
  }
}

// ---- float weights with f32 activations: kFloatLanes lanes over k (8 with AVX2, 16 with
// AVX-512), then hsum_f32 (AVX-512 first adds its upper 256 bits onto the lower ones)

#if defined(__AVX512F__)
using FloatVector = __m512;
inline constexpr int kFloatLanes = 16;
inline __m512 float_zero() {
  return _mm512_setzero_ps();
}
inline __m512 float_load(const float* p) {
  return _mm512_loadu_ps(p);
}
inline __m512 float_fma(__m512 a, __m512 b, __m512 c) {
  return _mm512_fmadd_ps(a, b, c);
}
inline float float_sum(__m512 v) {
  const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  return hsum_f32(_mm256_add_ps(_mm512_castps512_ps256(v), high));
}
#else
using FloatVector = __m256;
inline constexpr int kFloatLanes = 8;
inline __m256 float_zero() {
  return _mm256_setzero_ps();
}
inline __m256 float_load(const float* p) {
  return _mm256_loadu_ps(p);
}
inline __m256 float_fma(__m256 a, __m256 b, __m256 c) {
  return _mm256_fmadd_ps(a, b, c);
}
inline float float_sum(__m256 v) {
  return hsum_f32(v);
}
#endif

struct LoadF32 {
  static constexpr int kBytes = 4;
  static FloatVector load(const std::byte* p) {
    return float_load(reinterpret_cast<const float*>(p));
  }
  static float one(const std::byte* p) {
    float value;
    std::memcpy(&value, p, 4);
    return value;
  }
};
struct LoadF16 {
  static constexpr int kBytes = 2;
  static FloatVector load(const std::byte* p) {
#if defined(__AVX512F__)
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#else
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#endif
  }
  static float one(const std::byte* p) {
    std::uint16_t bits;
    std::memcpy(&bits, p, 2);
    return simd_half_to_float(bits);
  }
};
struct LoadBf16 {
  static constexpr int kBytes = 2;
  static FloatVector load(const std::byte* p) {
#if defined(__AVX512F__)
    const __m512i wide =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
#else
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
#endif
  }
  static float one(const std::byte* p) {
    std::uint16_t bits;
    std::memcpy(&bits, p, 2);
    return simd_bf16_to_float(bits);
  }
};

// R weight rows by T tokens. Each output sums its k chunks (kFloatLanes wide) into
// kFloatAccumulators accumulators, chunk c into accumulator c % kFloatAccumulators, then adds
// them in a fixed order: the same arithmetic whatever R and T are, so batch-invariant. Two
// accumulators hide the fma latency; a single token reads one row at a time, one sequential
// stream per thread (four rows interleaved gave F16 decode about a quarter less bandwidth).
inline constexpr int kFloatAccumulators = 2;
inline constexpr std::int64_t kFloatPrefetchBytes = 2048;

#if defined(__AVX512F__)
inline __m512 float_add(__m512 a, __m512 b) {
  return _mm512_add_ps(a, b);
}
#else
inline __m256 float_add(__m256 a, __m256 b) {
  return _mm256_add_ps(a, b);
}
#endif

template <class Load, int R, int T>
void float_tile(const std::byte* const* w, const float* const* x, std::int64_t cols,
                float* const* y, std::int64_t row) {
  constexpr int A = kFloatAccumulators;
  FloatVector acc[R][T][A];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      for (int a = 0; a < A; ++a) acc[r][t][a] = float_zero();
    }
  }
  const auto step = [&](std::int64_t at, int a) {
    if constexpr (R == 1 && T == 1) {
      // Decode streams the weights once: asking 2 KiB ahead adds about 15% of bandwidth
      // (matmul_bench f16, 2 threads) over the hardware prefetcher alone. A prefetch past the
      // end of the matrix is harmless.
      _mm_prefetch(reinterpret_cast<const char*>(w[0] + at * Load::kBytes + kFloatPrefetchBytes),
                   _MM_HINT_T0);
    }
    FloatVector xv[T];
    for (int t = 0; t < T; ++t) xv[t] = float_load(x[t] + at);
    for (int r = 0; r < R; ++r) {
      const FloatVector wv = Load::load(w[r] + at * Load::kBytes);
      for (int t = 0; t < T; ++t) acc[r][t][a] = float_fma(wv, xv[t], acc[r][t][a]);
    }
  };
  std::int64_t k = 0;
  for (; k + A * kFloatLanes <= cols; k += A * kFloatLanes) {
    for (int a = 0; a < A; ++a) step(k + a * kFloatLanes, a);
  }
  for (; k + kFloatLanes <= cols; k += kFloatLanes) {
    step(k, static_cast<int>((k / kFloatLanes) % A));
  }
  if (k < cols) {  // zero-padded last chunk: the padding adds +0 * +0
    const int a = static_cast<int>((k / kFloatLanes) % A);
    alignas(64) float padded[kFloatLanes];
    FloatVector xv[T];
    for (int t = 0; t < T; ++t) {
      std::fill_n(padded, kFloatLanes, 0.0f);
      std::copy(x[t] + k, x[t] + cols, padded);
      xv[t] = float_load(padded);
    }
    for (int r = 0; r < R; ++r) {
      std::fill_n(padded, kFloatLanes, 0.0f);
      for (std::int64_t i = k; i < cols; ++i) padded[i - k] = Load::one(w[r] + i * Load::kBytes);
      const FloatVector wv = float_load(padded);
      for (int t = 0; t < T; ++t) acc[r][t][a] = float_fma(wv, xv[t], acc[r][t][a]);
    }
  }
  static_assert(A == 2, "the sum below adds two accumulators");
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) y[t][row + r] = float_sum(float_add(acc[r][t][0], acc[r][t][1]));
  }
}

template <class Load, int R, int T>
void float_tile_at(const KernelArgs& args, std::int64_t row, std::int64_t token) {
  const auto* base = static_cast<const std::byte*>(args.w->data);
  const std::byte* w[R];
  for (int r = 0; r < R; ++r)
    w[r] = base + (row + r) * static_cast<std::int64_t>(args.w->row_bytes);
  const float* x[T];
  float* y[T];
  for (int t = 0; t < T; ++t) {
    x[t] = reinterpret_cast<const float*>(args.act + (token + t) * args.act_stride);
    y[t] = args.y + (token + t) * args.y_stride;
  }
  float_tile<Load, R, T>(w, x, args.w->cols, y, row);
}

// One token: row after row. A batch: kRows x kTokens tiles (AVX-512: 4 x 3 x 2 accumulators in
// 24 of its 32 registers; AVX2: 2 x 2 x 2 in 8 of its 16), leftovers one row at a time.
template <class Load>
void float_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  if (args.tokens == 1) {
    for (std::int64_t r = row_begin; r < row_end; ++r) float_tile_at<Load, 1, 1>(args, r, 0);
    return;
  }
#if defined(__AVX512F__)
  constexpr int kRows = 4, kTokens = 3;
#else
  constexpr int kRows = 2, kTokens = 2;
#endif
  std::int64_t r = row_begin;
  for (; r + kRows <= row_end; r += kRows) {
    std::int64_t t = 0;
    for (; t + kTokens <= args.tokens; t += kTokens)
      float_tile_at<Load, kRows, kTokens>(args, r, t);
    switch (args.tokens - t) {
      case 2:
        float_tile_at<Load, kRows, 2>(args, r, t);
        break;
      case 1:
        float_tile_at<Load, kRows, 1>(args, r, t);
        break;
      default:
        break;
    }
  }
  for (; r < row_end; ++r) {
    for (std::int64_t t = 0; t < args.tokens; ++t) float_tile_at<Load, 1, 1>(args, r, t);
  }
}

}  // namespace
}  // namespace tern::kernels::detail
