#include "kernels/cpu/kv_store.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/half.h"

namespace tern::kernels {
namespace {

__attribute__((target("f16c"))) std::uint16_t hardware_f32_to_f16(float value) {
  return static_cast<std::uint16_t>(_cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("f16c"))) float hardware_f16_to_f32(std::uint16_t value) {
  return _cvtsh_ss(value);
}

bool is_nan_f16(std::uint16_t h) {
  return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}

TEST(Half, EveryF16RoundTripsThroughF32) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f = f16_to_f32(h);
    if (is_nan_f16(h)) {
      EXPECT_TRUE(std::isnan(f)) << bits;
      EXPECT_TRUE(is_nan_f16(f32_to_f16(f))) << bits;
    } else {
      EXPECT_EQ(f32_to_f16(f), h) << bits;
    }
  }
}

// Bit-exact with F16C (round to nearest even), including subnormals, overflow, ties and NaN.
TEST(Half, MatchesF16cHardware) {
  if (!cpu_features().f16c) GTEST_SKIP() << "no F16C on this CPU";
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    if (is_nan_f16(h)) continue;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f16_to_f32(h)),
              std::bit_cast<std::uint32_t>(hardware_f16_to_f32(h)))
        << bits;
  }
  std::mt19937 rng(31);
  std::vector<float> values = {0.0f,      -0.0f,           65504.0f,       65519.99f, 65520.0f,
                               1e9f,      -1e9f,           0x1p-24f,       0x1p-25f,  0x1.8p-25f,
                               0x1p-26f,  0x1p-14f,        1e-8f,          -3e-7f,    INFINITY,
                               -INFINITY, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f};
  for (int i = 0; i < 2000000; ++i) {
    // Random bit patterns concentrated on f16's exponent range (plus a margin on both sides).
    const std::uint32_t exponent = 97 + rng() % 50;
    values.push_back(
        std::bit_cast<float>((static_cast<std::uint32_t>(rng()) & 0x807fffffu) | (exponent << 23)));
  }
  for (const float value : values) {
    ASSERT_EQ(f32_to_f16(value), hardware_f32_to_f16(value)) << value;
  }
  EXPECT_TRUE(is_nan_f16(f32_to_f16(NAN)));
}

// store_kv's vector conversion gives f32_to_f16's bits for every value, NaN payloads and signs
// included, in the sixteen-value body and in the tail alike.
TEST(Half, RowConversionMatchesTheScalarOneBitForBit) {
  if (!cpu_features().has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937 rng(47);
  std::vector<float> values = {0.0f,
                               -0.0f,
                               65504.0f,
                               65520.0f,
                               0x1p-24f,
                               0x1p-25f,
                               0x1.8p-25f,
                               1.0f + 0x1p-11f,
                               INFINITY,
                               -INFINITY,
                               NAN,
                               -NAN,
                               std::bit_cast<float>(0x7f800001u),
                               std::bit_cast<float>(0xffbfffffu),
                               std::bit_cast<float>(0x7fc01234u)};
  for (int i = 0; i < 1000000; ++i) {
    const std::uint32_t exponent = 97 + rng() % 50;
    values.push_back(
        std::bit_cast<float>((static_cast<std::uint32_t>(rng()) & 0x807fffffu) | (exponent << 23)));
    if (i % 1000 == 0) {  // a NaN, with a random payload and sign
      const auto payload = static_cast<std::uint32_t>(rng()) & 0x807fffffu;
      values.push_back(std::bit_cast<float>(0x7f800000u | payload | 1u));
    }
  }
  std::vector<std::uint16_t> converted(values.size());
  f32_to_f16_row_avx512(values.data(), static_cast<std::int64_t>(values.size()), converted.data());
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(converted[i], f32_to_f16(values[i])) << std::bit_cast<std::uint32_t>(values[i]);
  }
  for (std::int64_t length = 0; length <= 40; ++length) {  // every tail length, from offset 3
    std::vector<std::uint16_t> row(static_cast<std::size_t>(length) + 1, 0xabcd);
    f32_to_f16_row_avx512(values.data() + 3, length, row.data());
    for (std::int64_t i = 0; i < length; ++i) {
      ASSERT_EQ(row[static_cast<std::size_t>(i)],
                f32_to_f16(values[static_cast<std::size_t>(i + 3)]));
    }
    EXPECT_EQ(row.back(), 0xabcd) << "wrote past " << length;
  }
}

// bf16 keeps f32's exponent: rounding to nearest even in the top 16 bits.
TEST(Half, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80u);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80u);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82u);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81u);
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xff80u);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7f800001u)))));
  std::mt19937 rng(32);
  for (int i = 0; i < 100000; ++i) {
    const float value =
        std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0xbfffffffu);  // finite
    const float rounded = bf16_to_f32(f32_to_bf16(value));
    const std::uint32_t truncated = std::bit_cast<std::uint32_t>(value) & 0xffff0000u;
    const float down = std::bit_cast<float>(truncated);
    const float up = std::bit_cast<float>(truncated + 0x10000u);
    const double error = std::abs(double{rounded} - value);
    ASSERT_LE(error, std::min(std::abs(double{down} - value), std::abs(double{up} - value)))
        << value;
    ASSERT_TRUE(rounded == down || rounded == up) << value;
  }
}

TEST(KvStore, BlockBytes) {
  EXPECT_EQ(kv_block_bytes({KvType::f32, 16, 8, 128}), 16u * 8u * 128u * 4u);
  EXPECT_EQ(kv_block_bytes({KvType::f16, 16, 8, 128}), 16u * 8u * 128u * 2u);
  EXPECT_EQ(kv_block_bytes({KvType::bf16, 32, 2, 64}), 32u * 2u * 64u * 2u);
}

float read_cache(const std::vector<std::byte>& pool, KvType type, std::size_t element) {
  if (type == KvType::f32) {
    float value;
    std::memcpy(&value, pool.data() + element * 4, 4);
    return value;
  }
  std::uint16_t bits;
  std::memcpy(&bits, pool.data() + element * 2, 2);
  return type == KvType::f16 ? f16_to_f32(bits) : bf16_to_f32(bits);
}

float rounded(float value, KvType type) {
  if (type == KvType::f16) return f16_to_f32(f32_to_f16(value));
  if (type == KvType::bf16) return bf16_to_f32(f32_to_bf16(value));
  return value;
}

// Tokens land at block_table[position / block_size], slot position % block_size, laid out
// [kv_head][slot][dim] within the block; untouched slots keep their contents.
TEST(KvStore, WritesEachTokenAtItsBlockAndSlot) {
  for (const KvType type : {KvType::f32, KvType::f16, KvType::bf16}) {
    const KvCacheLayout layout{type, 4, 3, 8};
    const int blocks = 6;
    const std::int64_t width = layout.n_kv_heads * layout.head_dim;
    const std::int64_t k_stride = width + 5, v_stride = 3 * width;  // e.g. views into a fused QKV
    const std::vector<std::int32_t> block_table = {4, 1, 5};
    const std::vector<std::int32_t> positions = {2, 3, 4, 5, 9, 11};
    const std::int64_t tokens = static_cast<std::int64_t>(positions.size());
    std::vector<float> k(tokens * k_stride), v(tokens * v_stride);
    std::mt19937 rng(33);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    std::vector<std::byte> k_pool(blocks * kv_block_bytes(layout), std::byte{0x7f});
    std::vector<std::byte> v_pool(blocks * kv_block_bytes(layout), std::byte{0x7f});
    const std::vector<std::byte> untouched = k_pool;
    store_kv(k.data(), k_stride, v.data(), v_stride, tokens, positions.data(), block_table.data(),
             layout, k_pool.data(), v_pool.data());
    std::vector<bool> written(k_pool.size() / kv_type_bytes(type), false);
    for (std::int64_t t = 0; t < tokens; ++t) {
      const int position = positions[t];
      const std::size_t block = block_table[position / layout.block_size];
      const std::size_t slot = position % layout.block_size;
      for (int h = 0; h < layout.n_kv_heads; ++h) {
        for (int d = 0; d < layout.head_dim; ++d) {
          const std::size_t element = block * kv_block_bytes(layout) / kv_type_bytes(type) +
                                      (h * layout.block_size + slot) * layout.head_dim + d;
          written[element] = true;
          const std::int64_t column = h * layout.head_dim + d;
          EXPECT_EQ(read_cache(k_pool, type, element), rounded(k[t * k_stride + column], type));
          EXPECT_EQ(read_cache(v_pool, type, element), rounded(v[t * v_stride + column], type));
        }
      }
    }
    const std::size_t element_bytes = kv_type_bytes(type);
    for (std::size_t e = 0; e < written.size(); ++e) {
      if (written[e]) continue;
      ASSERT_EQ(0, std::memcmp(k_pool.data() + e * element_bytes,
                               untouched.data() + e * element_bytes, element_bytes));
      ASSERT_EQ(0, std::memcmp(v_pool.data() + e * element_bytes,
                               untouched.data() + e * element_bytes, element_bytes));
    }
  }
}

}  // namespace
}  // namespace tern::kernels
