// The KV block copy (kernels/cuda/copy_blocks_kernel.cuh) through its launcher: every layer's K
// and V pools get the source blocks' bytes at the destination blocks, and nothing else changes;
// 16-byte and byte-wise paths, more pairs than one launch takes, every schedule; pairs the
// launcher can see are wrong are refused before anything is launched. Copies are exact.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "kernels/cpu/kv_store.h"
#include "kernels/cuda/copy_blocks.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

constexpr int kBlocks = 6;  // blocks per pool of the refusal test

constexpr int kLayers = 3;
constexpr std::size_t kGuardBytes = 16;  // past the last block: must stay as it was

// Every layer's K and V pools in device memory, filled with random bytes, and the device arrays
// of their pointers the launcher takes.
class Pools {
 public:
  Pools(std::size_t block_bytes, int blocks) {
    std::mt19937 random(static_cast<unsigned>(block_bytes * 31 + blocks));
    for (int p = 0; p < 2 * kLayers; ++p) {
      std::vector<unsigned char> bytes(block_bytes * static_cast<std::size_t>(blocks) +
                                       kGuardBytes);
      for (unsigned char& byte : bytes) byte = static_cast<unsigned char>(random());
      host_.push_back(bytes);
      device_.push_back(std::make_unique<DeviceArray<unsigned char>>(bytes));
    }
    std::vector<void*> k, v;
    for (int layer = 0; layer < kLayers; ++layer) {
      k.push_back(device_[static_cast<std::size_t>(2 * layer)]->data());
      v.push_back(device_[static_cast<std::size_t>(2 * layer + 1)]->data());
    }
    k_pools_ = std::make_unique<DeviceArray<void*>>(k);
    v_pools_ = std::make_unique<DeviceArray<void*>>(v);
  }

  void* const* k_pools() const { return k_pools_->data(); }
  void* const* v_pools() const { return v_pools_->data(); }

  // The pools as the copies should leave them.
  std::vector<std::vector<unsigned char>> expected(const std::vector<BlockCopy>& pairs,
                                                   std::size_t block_bytes) const {
    std::vector<std::vector<unsigned char>> pools = host_;
    for (std::vector<unsigned char>& pool : pools) {
      for (const BlockCopy& pair : pairs) {
        std::copy_n(pool.begin() + static_cast<long>(pair.src * block_bytes), block_bytes,
                    pool.begin() + static_cast<long>(pair.dst * block_bytes));
      }
    }
    return pools;
  }
  std::vector<std::vector<unsigned char>> download() const {
    std::vector<std::vector<unsigned char>> pools;
    for (const auto& pool : device_) pools.push_back(pool->download());
    return pools;
  }

 private:
  std::vector<std::vector<unsigned char>> host_;
  std::vector<std::unique_ptr<DeviceArray<unsigned char>>> device_;
  std::unique_ptr<DeviceArray<void*>> k_pools_, v_pools_;
};

void expect_pools(const std::vector<std::vector<unsigned char>>& actual,
                  const std::vector<std::vector<unsigned char>>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t p = 0; p < actual.size(); ++p) {
    ASSERT_EQ(actual[p].size(), expected[p].size());
    for (std::size_t i = 0; i < actual[p].size(); ++i)
      ASSERT_EQ(actual[p][i], expected[p][i])
          << "layer " << p / 2 << (p % 2 == 0 ? " K" : " V") << " byte " << i;
  }
}

struct Case {
  KvCacheLayout layout;
  int blocks;
  std::vector<BlockCopy> pairs;
};

// Pairs i -> blocks - 1 - i for the first `count` blocks: sources and destinations apart.
std::vector<BlockCopy> mirrored_pairs(int count, int blocks) {
  std::vector<BlockCopy> pairs;
  for (int i = 0; i < count; ++i) pairs.push_back({i, blocks - 1 - i});
  return pairs;
}

TEST(CudaCopyBlocks, CopiesEveryLayersBlocksAndNothingElse) {
  TERN_REQUIRE_DEVICE();
  const Case cases[] = {
      // 128-byte blocks: 16 bytes per access; sources repeat, destinations do not.
      {{KvType::f16, 4, 2, 8}, 10, {{2, 7}, {0, 5}, {2, 9}, {4, 3}}},
      // 64 KiB blocks: 16 blocks of threads per block copy.
      {{KvType::f32, 16, 8, 128}, 6, {{1, 4}, {0, 5}}},
      // 30-byte blocks: byte by byte, and 130 pairs take two launches.
      {{KvType::bf16, 5, 1, 3}, 300, mirrored_pairs(130, 300)},
      // One pair, the last block as the source.
      {{KvType::f16, 16, 8, 128}, 3, {{2, 0}}},
  };
  for (const Case& c : cases) {
    const std::size_t block_bytes = kv_block_bytes(c.layout);
    SCOPED_TRACE(testing::Message()
                 << "block bytes " << block_bytes << " pairs " << c.pairs.size());
    cuda_test::for_each_pass([&](const cuda_test::Pass&) {
      const Pools pools(block_bytes, c.blocks);
      TERN_EXPECT_LAUNCHED(launch_copy_blocks(pools.k_pools(), pools.v_pools(), kLayers,
                                              block_bytes, c.blocks, c.pairs.data(),
                                              static_cast<int>(c.pairs.size()), nullptr));
      expect_pools(pools.download(), pools.expected(c.pairs, block_bytes));
    });
  }
}

TEST(CudaCopyBlocks, LauncherRefusesPairsItCanSeeAreWrong) {
  TERN_REQUIRE_DEVICE();
  const KvCacheLayout layout{KvType::f16, 4, 2, 8};
  const std::size_t block_bytes = kv_block_bytes(layout);
  const Pools pools(block_bytes, kBlocks);
  const auto copy = [&](const std::vector<BlockCopy>& pairs, int layers = kLayers,
                        int blocks = kBlocks) {
    return launch_copy_blocks(pools.k_pools(), pools.v_pools(), layers, block_bytes, blocks,
                              pairs.data(), static_cast<int>(pairs.size()), nullptr);
  };
  EXPECT_EQ(copy({{1, 1}}), cudaErrorInvalidValue);                  // src == dst
  EXPECT_EQ(copy({{-1, 2}}), cudaErrorInvalidValue);                 // src out of range
  EXPECT_EQ(copy({{1, kBlocks}}), cudaErrorInvalidValue);            // dst out of range
  EXPECT_EQ(copy({{0, 2}, {1, 2}}), cudaErrorInvalidValue);          // dst twice
  EXPECT_EQ(copy({{0, 2}, {2, 3}}), cudaErrorInvalidValue);          // a dst is another's src
  EXPECT_EQ(copy({{0, 2}, {0, 1}, {5, 5}}), cudaErrorInvalidValue);  // one bad pair of three
  EXPECT_EQ(copy({{0, 2}}, -1), cudaErrorInvalidValue);
  EXPECT_EQ(copy({{0, 2}}, kLayers, -1), cudaErrorInvalidValue);
  EXPECT_EQ(launch_copy_blocks(pools.k_pools(), pools.v_pools(), kLayers, block_bytes, kBlocks,
                               nullptr, 1, nullptr),
            cudaErrorInvalidValue);
  const BlockCopy pair{0, 1};
  EXPECT_EQ(launch_copy_blocks(pools.k_pools(), pools.v_pools(), kLayers, block_bytes, kBlocks,
                               &pair, -1, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(copy({}), cudaSuccess);  // nothing to copy
  EXPECT_EQ(copy({{0, 2}}, 0), cudaSuccess);
  expect_pools(pools.download(), pools.expected({}, block_bytes));
}

}  // namespace
}  // namespace tern::kernels::cuda
