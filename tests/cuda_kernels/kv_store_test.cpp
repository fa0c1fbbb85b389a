// The KV cache store (kernels/cuda/kv_store_kernel.cuh) through its launcher, against the CPU
// store_kv: every element type, head sizes, head counts and block sizes, padded rows, under every
// schedule. The pools are compared byte for byte.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/kv_store.h"
#include "kernels/cuda/kv_store.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

// Values that exercise the f16 and bf16 rounding: ties to even, subnormal halves, overflow to
// infinity, signed zero. NaN is left out on purpose: a GPU's conversion writes the canonical NaN
// 0x7fff, the CPU's keeps the sign and writes 0x7e00 (f16) or the quieted payload (bf16).
constexpr float kEdgeValues[] = {0.0f,     -0.0f,          1.0f + 0x1p-11f,    1.0f + 3 * 0x1p-11f,
                                 1e-6f,    -3e-8f,         70000.0f,           -65519.0f,
                                 65520.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 3e38f,
                                 INFINITY, -INFINITY,      5.96e-8f,           2.98e-8f};

std::vector<float> random_rows(long long tokens, long long stride, std::mt19937& random) {
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  std::vector<float> rows(static_cast<std::size_t>(tokens * stride));
  for (float& v : rows) v = value(random);
  for (std::size_t i = 0; i < rows.size(); i += 7) rows[i] = kEdgeValues[(i / 7) % 16];
  return rows;
}

// A pool whose every byte says where it is, so an untouched byte is told from a written one.
std::vector<std::uint8_t> patterned_pool(std::size_t bytes, std::uint8_t seed) {
  std::vector<std::uint8_t> pool(bytes);
  for (std::size_t i = 0; i < bytes; ++i) pool[i] = static_cast<std::uint8_t>(i * 31 + seed);
  return pool;
}

// The index of the first byte where the pools differ, -1 where they are the same: a failure names
// one byte instead of printing two pools.
long long first_difference(const std::vector<std::uint8_t>& actual,
                           const std::vector<std::uint8_t>& expected) {
  if (actual.size() != expected.size()) return 0;
  const auto at = std::mismatch(actual.begin(), actual.end(), expected.begin());
  return at.first == actual.end() ? -1 : at.first - actual.begin();
}

struct Case {
  KvType type;
  int block_size;
  int n_kv_heads;
  int head_dim;
  long long tokens;
};

// One sequence of `tokens` rows from position first_position, blocks from a shuffled table, every
// fifth row padding (slot -1). The CPU store_kv writes the real rows one at a time.
void expect_same_bytes_as_cpu(const Case& c, std::mt19937& random) {
  SCOPED_TRACE(::testing::Message() << "type " << static_cast<int>(c.type) << " block_size "
                                    << c.block_size << " n_kv_heads " << c.n_kv_heads
                                    << " head_dim " << c.head_dim << " tokens " << c.tokens);
  const KvCacheLayout layout{c.type, c.block_size, c.n_kv_heads, c.head_dim};
  const long long width = static_cast<long long>(c.n_kv_heads) * c.head_dim;
  const long long k_stride = width + 5;  // as when k is a slice of a fused qkv row
  const long long v_stride = width;
  const int first_position = c.block_size / 2 + 1;
  const int num_blocks = static_cast<int>((first_position + c.tokens) / c.block_size) + 3;
  std::vector<std::int32_t> block_table(static_cast<std::size_t>(num_blocks));
  std::iota(block_table.begin(), block_table.end(), 0);
  std::shuffle(block_table.begin(), block_table.end(), random);
  std::vector<std::int32_t> slots(static_cast<std::size_t>(c.tokens));
  for (long long t = 0; t < c.tokens; ++t) {
    const int position = first_position + static_cast<int>(t);
    slots[static_cast<std::size_t>(t)] =
        t % 5 == 3 ? -1
                   : block_table[static_cast<std::size_t>(position / c.block_size)] * c.block_size +
                         position % c.block_size;
  }
  const std::vector<float> k = random_rows(c.tokens, k_stride, random);
  const std::vector<float> v = random_rows(c.tokens, v_stride, random);
  const std::size_t pool_bytes = kv_block_bytes(layout) * static_cast<std::size_t>(num_blocks);
  std::vector<std::uint8_t> expected_k = patterned_pool(pool_bytes, 1);
  std::vector<std::uint8_t> expected_v = patterned_pool(pool_bytes, 2);
  for (long long t = 0; t < c.tokens; ++t) {
    if (slots[static_cast<std::size_t>(t)] < 0) continue;
    const std::int32_t position = first_position + static_cast<std::int32_t>(t);
    store_kv(k.data() + t * k_stride, k_stride, v.data() + t * v_stride, v_stride, 1, &position,
             block_table.data(), layout, expected_k.data(), expected_v.data());
  }
  DeviceArray<float> d_k(k), d_v(v);
  DeviceArray<std::int32_t> d_slots(slots);
  cuda_test::for_each_pass([&](const cuda_test::Pass&) {
    DeviceArray<std::uint8_t> d_k_pool(patterned_pool(pool_bytes, 1));
    DeviceArray<std::uint8_t> d_v_pool(patterned_pool(pool_bytes, 2));
    TERN_EXPECT_LAUNCHED(launch_store_kv(d_k.data(), k_stride, d_v.data(), v_stride, c.tokens,
                                         d_slots.data(), layout, num_blocks, d_k_pool.data(),
                                         d_v_pool.data(), nullptr));
    EXPECT_EQ(first_difference(d_k_pool.download(), expected_k), -1);
    EXPECT_EQ(first_difference(d_v_pool.download(), expected_v), -1);
  });
}

TEST(CudaKvStore, WritesTheCpuKernelsBytesAndSkipsPaddedRows) {
  TERN_REQUIRE_DEVICE();
  std::mt19937 random(5);
  constexpr long long kTokenCounts[] = {1, 37, 70, 4};
  std::size_t index = 0;
  for (const KvType type : {KvType::f32, KvType::f16, KvType::bf16})
    for (const int block_size : {16, 32})
      for (const int head_dim : {16, 24, 40, 64, 128})
        for (const int n_kv_heads : {1, 3, 8})
          expect_same_bytes_as_cpu(
              {type, block_size, n_kv_heads, head_dim, kTokenCounts[index++ % 4]}, random);
}

TEST(CudaKvStore, SkipsSlotsOutsideThePools) {
  TERN_REQUIRE_DEVICE();
  const KvCacheLayout layout{KvType::f16, 16, 2, 16};
  const int num_blocks = 2;
  const std::vector<float> rows(4 * 32, 1.0f);
  const std::vector<std::int32_t> slots = {32, -1, -7, 2147483647};
  const std::vector<std::uint8_t> pool = patterned_pool(kv_block_bytes(layout) * num_blocks, 9);
  DeviceArray<float> d_rows(rows);
  DeviceArray<std::int32_t> d_slots(slots);
  cuda_test::for_each_pass([&](const cuda_test::Pass&) {
    DeviceArray<std::uint8_t> d_k(pool), d_v(pool);
    TERN_EXPECT_LAUNCHED(launch_store_kv(d_rows.data(), 32, d_rows.data(), 32, 4, d_slots.data(),
                                         layout, num_blocks, d_k.data(), d_v.data(), nullptr));
    EXPECT_EQ(first_difference(d_k.download(), pool), -1);
    EXPECT_EQ(first_difference(d_v.download(), pool), -1);
  });
}

TEST(CudaKvStore, RefusesBadShapesWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  const KvCacheLayout good{KvType::bf16, 16, 2, 16};
  const std::vector<float> rows(2 * 32, 1.0f);
  const std::vector<std::int32_t> slots = {0, 1};
  const std::vector<std::uint8_t> pool = patterned_pool(kv_block_bytes(good), 3);
  DeviceArray<float> d_rows(rows);
  DeviceArray<std::int32_t> d_slots(slots);
  DeviceArray<std::uint8_t> d_k(pool), d_v(pool);
  const auto launch = [&](long long tokens, long long stride, KvCacheLayout layout,
                          std::int32_t blocks, const std::int32_t* at, void* k_pool) {
    return launch_store_kv(d_rows.data(), stride, d_rows.data(), 32, tokens, at, layout, blocks,
                           k_pool, d_v.data(), nullptr);
  };
  const std::int32_t* at = d_slots.data();
  void* k_pool = d_k.data();
  EXPECT_EQ(launch(-1, 32, good, 1, at, k_pool), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 31, good, 1, at, k_pool), cudaErrorInvalidValue);  // stride < width
  EXPECT_EQ(launch(2, 32, {KvType::bf16, 0, 2, 16}, 1, at, k_pool), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, {KvType::bf16, 16, 0, 16}, 1, at, k_pool), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, {KvType::bf16, 16, 2, 0}, 1, at, k_pool), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, good, -1, at, k_pool), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, good, 1, nullptr, k_pool), cudaErrorInvalidValue);
  EXPECT_EQ(launch(2, 32, good, 1, at, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch(0, 32, good, 1, at, k_pool), cudaSuccess);  // an empty batch is no work
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(first_difference(d_k.download(), pool), -1);
  EXPECT_EQ(first_difference(d_v.download(), pool), -1);
}

}  // namespace
}  // namespace tern::kernels::cuda
