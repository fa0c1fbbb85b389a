#include "kernels/cpu/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/half.h"
#include "kernels/cpu/quant_blocks.h"

namespace tern::kernels {
namespace {

TEST(HalfFloat, ConvertsExactlyAndRoundsToNearestEven) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x0001), 0x1p-24f);
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
  // Every half survives a round trip.
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;  // NaN payloads
    ASSERT_EQ(f32_to_f16(f16_to_f32(h)), h) << bits;
  }
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3C00);  // tie goes to even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);
  EXPECT_EQ(f32_to_f16(0x1.8p-25f), 0x0001);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_f32(0xC040), -3.0f);
}

TEST(Quant, DecodesHandBuiltQ8_0AndQ4_0Blocks) {
  BlockQ8_0 q8{};
  q8.d = 0x3800;  // 0.5
  q8.qs[0] = -128;
  q8.qs[31] = 7;
  float out[32];
  dequantize_row(TensorType::q8_0, &q8, out, 32);
  EXPECT_EQ(out[0], -64.0f);
  EXPECT_EQ(out[31], 3.5f);
  EXPECT_EQ(out[1], 0.0f);

  BlockQ4_0 q4{};
  q4.d = 0x4000;    // 2
  q4.qs[0] = 0xF0;  // element 0: 0 - 8, element 16: 15 - 8
  q4.qs[15] = 0x98;
  dequantize_row(TensorType::q4_0, &q4, out, 32);
  EXPECT_EQ(out[0], -16.0f);
  EXPECT_EQ(out[16], 14.0f);
  EXPECT_EQ(out[15], 0.0f);
  EXPECT_EQ(out[31], 2.0f);
  EXPECT_EQ(out[1], -16.0f);
}

TEST(Quant, DecodesHandBuiltQ4KBlock) {
  // d = 0.5, dmin = 0.25; scales 1, 2, 3, 4, 33, 40, 63, 17 and mins 0, 1, 2, 3, 50, 20, 7, 63,
  // packed by hand: bytes 0-3 scale | (high bits of scale j+4) << 6, bytes 4-7 the same for mins,
  // bytes 8-11 low nibble of scale j+4 | low nibble of min j+4 << 4.
  BlockQ4K block{};
  block.d = 0x3800;
  block.dmin = 0x3400;
  const std::uint8_t scales[12] = {0x81, 0x82, 0xC3, 0x44, 0xC0, 0x41,
                                   0x02, 0xC3, 0x21, 0x48, 0x7F, 0xF1};
  std::memcpy(block.scales, scales, 12);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      block.qs[32 * c + l] = static_cast<std::uint8_t>((l & 15) | (((l + c) & 15) << 4));
    }
  }
  float out[256];
  dequantize_row(TensorType::q4_k, &block, out, 256);
  EXPECT_EQ(out[0], 0.0f);                // 0.5 * 1 * 0 - 0.25 * 0
  EXPECT_EQ(out[5], 2.5f);                // 0.5 * 1 * 5
  EXPECT_EQ(out[32 + 3], 2.75f);          // 0.5 * 2 * 3 - 0.25 * 1
  EXPECT_EQ(out[128 + 7], 103.0f);        // sub-block 4: 0.5 * 33 * 7 - 0.25 * 50
  EXPECT_EQ(out[128 + 32 + 10], 235.0f);  // sub-block 5: 0.5 * 40 * 12 - 0.25 * 20
  EXPECT_EQ(out[192 + 20], 124.25f);      // sub-block 6: 0.5 * 63 * 4 - 0.25 * 7
  EXPECT_EQ(out[192 + 32 + 31], 1.25f);   // sub-block 7: 0.5 * 17 * 2 - 0.25 * 63
}

TEST(Quant, DecodesHandBuiltQ6KBlock) {
  BlockQ6K block{};
  block.d = 0x4000;     // 2
  block.ql[0] = 0x5A;   // element 0 low bits 10, element 64 low bits 5
  block.ql[32] = 0x03;  // element 32 low bits 3, element 96 low bits 0
  block.qh[0] = 0xE4;   // high bits: element 0 -> 0, 32 -> 1, 64 -> 2, 96 -> 3
  block.ql[81] = 0xF7;  // element 145 low bits 7, element 209 low bits 15
  block.qh[49] = 0x33;  // element 145 high 3, element 177 high 0, element 209 high 3
  block.scales[0] = 1;
  block.scales[2] = -3;
  block.scales[4] = 7;
  block.scales[6] = -100;
  block.scales[9] = 50;
  block.scales[13] = -2;
  block.scales[15] = 127;
  float out[256];
  dequantize_row(TensorType::q6_k, &block, out, 256);
  EXPECT_EQ(out[0], -44.0f);      // 2 * 1 * (10 - 32)
  EXPECT_EQ(out[1], -64.0f);      // 2 * 1 * (0 - 32)
  EXPECT_EQ(out[32], 78.0f);      // 2 * -3 * (19 - 32)
  EXPECT_EQ(out[64], 70.0f);      // 2 * 7 * (37 - 32)
  EXPECT_EQ(out[96], -3200.0f);   // 2 * -100 * (48 - 32)
  EXPECT_EQ(out[145], 2300.0f);   // 2 * 50 * (55 - 32)
  EXPECT_EQ(out[209], -124.0f);   // 2 * -2 * (63 - 32)
  EXPECT_EQ(out[255], -8128.0f);  // 2 * 127 * (0 - 32)
}

struct RoundTripCase {
  TensorType type;
  double max_error;  // per element, relative to its block's largest magnitude (F16/BF16: to itself)
  double rms_error;  // relative to the RMS of the input (unit normal)
};

TEST(Quant, RoundTripErrorIsBounded) {
  // The quantized bounds are half a step, except Q4_0 (the far extreme clamps to 7 of 8 steps,
  // a full step off) and Q4_K (the scale rounds up and the min rounds to 6 bits).
  const RoundTripCase cases[] = {
      {TensorType::f32, 0.0, 0.0},
      {TensorType::f16, 1.0 / 2048, 4e-4},
      {TensorType::bf16, 1.0 / 256, 3e-3},
      {TensorType::q8_0, 0.5 / 127 + 1e-3, 0.007},
      {TensorType::q4_0, 1.0 / 8 + 1e-3, 0.1},
      {TensorType::q4_k, 0.1, 0.11},
      {TensorType::q6_k, 0.5 / 32 + 0.01, 0.026},
      {TensorType::q8_k, 0.5 / 127 + 1e-6, 0.009},
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr std::int64_t n = 4096;
  std::vector<float> x(n), back(n);
  for (float& v : x) v = normal(rng);
  x[3] = 0.0f;
  for (std::int64_t i = 256; i < 512; ++i)
    x[static_cast<std::size_t>(i)] = 0.0f;  // an all-zero block
  for (const RoundTripCase& c : cases) {
    SCOPED_TRACE(std::string(tensor_type_name(c.type)));
    const auto bytes = tensor_bytes(c.type, n);
    ASSERT_TRUE(bytes);
    std::vector<std::byte> encoded(*bytes);
    ASSERT_TRUE(quantize_row(c.type, x.data(), encoded.data(), n));
    dequantize_row(c.type, encoded.data(), back.data(), n);
    const std::int64_t block =
        std::max<std::int64_t>(tensor_type_traits(c.type).block_elements, 32);
    double squared_error = 0, squared = 0;
    for (std::int64_t b = 0; b < n; b += block) {
      float block_max = 0;
      for (std::int64_t i = b; i < b + block; ++i) block_max = std::max(block_max, std::fabs(x[i]));
      for (std::int64_t i = b; i < b + block; ++i) {
        const double error = std::fabs(static_cast<double>(back[i]) - x[i]);
        const double allowed = c.type == TensorType::f16 || c.type == TensorType::bf16
                                   ? c.max_error * std::fabs(x[i])
                                   : c.max_error * block_max;
        ASSERT_LE(error, allowed) << "element " << i;
        squared_error += error * error;
        squared += static_cast<double>(x[i]) * x[i];
      }
    }
    EXPECT_EQ(back[3] == 0.0f || c.type == TensorType::q4_k, true);
    EXPECT_LE(std::sqrt(squared_error / squared), c.rms_error);
  }
}

TEST(Quant, RejectsPartialBlocksAndUnsupportedTypes) {
  std::vector<float> x(100, 1.0f);
  std::vector<std::byte> out(1024);
  EXPECT_FALSE(quantize_row(TensorType::q8_0, x.data(), out.data(), 33));
  EXPECT_FALSE(quantize_row(TensorType::q4_k, x.data(), out.data(), 64));
  EXPECT_FALSE(quantize_row(TensorType::q5_k, x.data(), out.data(), 256));
  EXPECT_TRUE(quantize_row(TensorType::f16, x.data(), out.data(), 33));
  EXPECT_TRUE(is_matmul_supported(TensorType::q6_k));
  EXPECT_FALSE(is_matmul_supported(TensorType::q8_k));
  EXPECT_FALSE(is_matmul_supported(TensorType::q5_0));
}

}  // namespace
}  // namespace tern::kernels
