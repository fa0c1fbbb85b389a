// The reference variant of the matmul kernels: plain C++ for baseline x86-64, one output element
// at a time, following the canonical arithmetic of matmul_kernels.h.

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/half.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quant.h"

namespace tern::kernels::detail {
namespace {

const std::byte* weight_row(const KernelArgs& args, std::int64_t row) {
  return static_cast<const std::byte*>(args.w->data) +
         row * static_cast<std::int64_t>(args.w->row_bytes);
}

template <class Activation>
const Activation* activation_row(const KernelArgs& args, std::int64_t token) {
  return reinterpret_cast<const Activation*>(args.act + token * args.act_stride);
}

// Calls dot(weight row, token) for every element and stores it.
template <class Dot>
void for_each_element(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end,
                      Dot dot) {
  for (std::int64_t t = 0; t < args.tokens; ++t) {
    for (std::int64_t r = row_begin; r < row_end; ++r) {
      args.y[t * args.y_stride + r] = dot(weight_row(args, r), t);
    }
  }
}

template <float (*ToFloat)(const std::byte*, std::int64_t)>
void float_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  const std::int64_t cols = args.w->cols;
  for_each_element(args, row_begin, row_end, [&](const std::byte* w, std::int64_t t) {
    const float* x = activation_row<float>(args, t);
    float acc = 0.0f;
    for (std::int64_t k = 0; k < cols; ++k) acc += ToFloat(w, k) * x[k];
    return acc;
  });
}

float f32_at(const std::byte* w, std::int64_t k) {
  float value;
  std::memcpy(&value, w + k * 4, 4);
  return value;
}
float f16_at(const std::byte* w, std::int64_t k) {
  std::uint16_t bits;
  std::memcpy(&bits, w + k * 2, 2);
  return f16_to_f32(bits);
}
float bf16_at(const std::byte* w, std::int64_t k) {
  std::uint16_t bits;
  std::memcpy(&bits, w + k * 2, 2);
  return bf16_to_f32(bits);
}

void q8_0_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  const std::int64_t blocks = args.w->cols / 32;
  for_each_element(args, row_begin, row_end, [&](const std::byte* row, std::int64_t t) {
    const auto* w = reinterpret_cast<const BlockQ8_0*>(row);
    const Q8Activation* x = activation_row<Q8Activation>(args, t);
    float acc = 0.0f;
    for (std::int64_t b = 0; b < blocks; ++b) {
      int sum = 0;
      for (int i = 0; i < 32; ++i) sum += w[b].qs[i] * x[b].qs[i];
      acc = std::fma(static_cast<float>(sum), f16_to_f32(w[b].d) * x[b].d, acc);
    }
    return acc;
  });
}

void q4_0_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  const std::int64_t blocks = args.w->cols / 32;
  for_each_element(args, row_begin, row_end, [&](const std::byte* row, std::int64_t t) {
    const auto* w = reinterpret_cast<const BlockQ4_0*>(row);
    const Q8Activation* x = activation_row<Q8Activation>(args, t);
    float acc = 0.0f;
    for (std::int64_t b = 0; b < blocks; ++b) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) {
        sum += ((w[b].qs[i] & 0x0F) - 8) * x[b].qs[i];
        sum += ((w[b].qs[i] >> 4) - 8) * x[b].qs[i + 16];
      }
      acc = std::fma(static_cast<float>(sum), f16_to_f32(w[b].d) * x[b].d, acc);
    }
    return acc;
  });
}

void q4_k_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  const std::int64_t blocks = args.w->cols / 256;
  for_each_element(args, row_begin, row_end, [&](const std::byte* row, std::int64_t t) {
    const auto* w = reinterpret_cast<const BlockQ4K*>(row);
    const BlockQ8K* x = activation_row<BlockQ8K>(args, t);
    float acc = 0.0f;
    for (std::int64_t b = 0; b < blocks; ++b) {
      int sum = 0, min_sum = 0;
      for (int j = 0; j < 8; ++j) {
        int scale = 0, min = 0;
        q4_k_scale_min(j, w[b].scales, scale, min);
        const int c = j / 2, shift = 4 * (j % 2);
        int block_sum = 0;
        for (int l = 0; l < 32; ++l) {
          block_sum += ((w[b].qs[32 * c + l] >> shift) & 0x0F) * x[b].qs[32 * j + l];
        }
        sum += scale * block_sum;
        min_sum += min * (x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
      }
      acc = std::fma(static_cast<float>(sum), f16_to_f32(w[b].d) * x[b].d, acc);
      acc = std::fma(static_cast<float>(min_sum), -(f16_to_f32(w[b].dmin) * x[b].d), acc);
    }
    return acc;
  });
}

void q6_k_rows(const KernelArgs& args, std::int64_t row_begin, std::int64_t row_end) {
  const std::int64_t blocks = args.w->cols / 256;
  for_each_element(args, row_begin, row_end, [&](const std::byte* row, std::int64_t t) {
    const auto* w = reinterpret_cast<const BlockQ6K*>(row);
    const BlockQ8K* x = activation_row<BlockQ8K>(args, t);
    float acc = 0.0f;
    for (std::int64_t b = 0; b < blocks; ++b) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) {
        int block_sum = 0;
        for (int i = 0; i < 16; ++i) {
          const int e = 16 * j + i, n = e / 128, k = (e % 128) / 32, l = e % 32;
          const std::uint8_t low_byte = w[b].ql[64 * n + l + 32 * (k & 1)];
          const int low = k < 2 ? (low_byte & 0x0F) : (low_byte >> 4);
          const int q = low | (((w[b].qh[32 * n + l] >> (2 * k)) & 3) << 4);
          block_sum += (q - 32) * x[b].qs[e];
        }
        sum += w[b].scales[j] * block_sum;
      }
      acc = std::fma(static_cast<float>(sum), f16_to_f32(w[b].d) * x[b].d, acc);
    }
    return acc;
  });
}

void quantize_q8(const float* x, std::int64_t cols, Q8Activation* dst, int offset) {
  for (std::int64_t b = 0; b < cols / 32; ++b) {
    const float* v = x + b * 32;
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      const int q = static_cast<int>(std::nearbyint(v[i] * id));
      dst[b].qs[i] = static_cast<std::int8_t>(q);
      sum += q;
    }
    dst[b].d = d;
    dst[b].bias = -offset * sum;
  }
}

void quantize_q8_k(const float* x, std::int64_t cols, BlockQ8K* dst) {
  quantize_row(TensorType::q8_k, x, dst, cols);
}

std::size_t no_scratch(std::int64_t) {
  return 0;
}

}  // namespace

const KernelTable& scalar_kernels() {
  static constexpr KernelTable table{
      quantize_q8, quantize_q8_k, float_rows<f32_at>, float_rows<f16_at>, float_rows<bf16_at>,
      q8_0_rows,   q4_0_rows,     q4_k_rows,          q6_k_rows,          no_scratch,
  };
  return table;
}

}  // namespace tern::kernels::detail
