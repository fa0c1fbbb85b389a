#include "engine/kv_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

namespace tern::engine {
namespace {

std::vector<std::int32_t> iota_tokens(std::int32_t count, std::int32_t first = 0) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(count));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

std::vector<std::int32_t> table_of(const BlockTable& table) {
  return {table.blocks().begin(), table.blocks().end()};
}

// Stands in for the KV memory: each slot remembers the token written there, so reading a
// sequence back checks that prefix hits, forks and copies hand out the right KV.
class FakeKvMemory {
 public:
  FakeKvMemory(std::int32_t num_blocks, std::int32_t block_size)
      : block_size_(block_size), slots_(static_cast<std::size_t>(num_blocks * block_size), -1) {}

  void copy(const std::vector<BlockCopy>& copies) {
    for (const BlockCopy& copy : copies) {
      std::copy_n(slots_.begin() + copy.src * block_size_, block_size_,
                  slots_.begin() + copy.dst * block_size_);
    }
  }
  void write(const BlockTable& table, const std::vector<std::int32_t>& tokens, std::int32_t begin,
             std::int32_t end) {
    for (std::int32_t p = begin; p < end; ++p)
      slots_[slot(table, p)] = tokens[static_cast<std::size_t>(p)];
  }
  bool holds(const BlockTable& table, const std::vector<std::int32_t>& tokens,
             std::int32_t end) const {
    for (std::int32_t p = 0; p < end; ++p) {
      if (slots_[slot(table, p)] != tokens[static_cast<std::size_t>(p)]) return false;
    }
    return true;
  }

 private:
  std::size_t slot(const BlockTable& table, std::int32_t position) const {
    const std::int32_t block = table.blocks()[static_cast<std::size_t>(position / block_size_)];
    return static_cast<std::size_t>(block * block_size_ + position % block_size_);
  }

  std::int32_t block_size_;
  std::vector<std::int32_t> slots_;
};

TEST(KvCache, AllocatesAndFreesBlocks) {
  KvCacheManager cache({.num_blocks = 10, .block_size = 4});
  BlockTable table;
  const auto cached = cache.allocate(table, iota_tokens(10));
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(*cached, 0);
  EXPECT_EQ(table.blocks().size(), 3u);
  EXPECT_EQ(table.num_tokens(), 10);
  EXPECT_EQ(cache.num_used_blocks(), 3);
  EXPECT_EQ(cache.num_free_blocks(), 7);
  EXPECT_DOUBLE_EQ(cache.usage(), 0.3);
  cache.free(table);
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(cache.num_free_blocks(), 10);
  EXPECT_TRUE(cache.check_invariants());
}

TEST(KvCache, ReusesComputedPrefixBlocksAndReportsCachedTokens) {
  KvCacheManager cache({.num_blocks = 16, .block_size = 4});
  auto prompt = iota_tokens(14);
  BlockTable first;
  ASSERT_EQ(cache.allocate(first, prompt), 0);
  // Nothing is published before its KV is written.
  BlockTable early;
  ASSERT_EQ(cache.allocate(early, prompt), 0);
  cache.free(early);
  cache.mark_computed(first, prompt, 14);
  EXPECT_EQ(cache.num_cached_blocks(), 3);
  const auto first_blocks = table_of(first);
  cache.free(first);

  auto longer = iota_tokens(12);
  longer.insert(longer.end(), {100, 101, 102, 103, 104});
  BlockTable second;
  ASSERT_EQ(cache.allocate(second, longer), 12);
  EXPECT_TRUE(std::equal(first_blocks.begin(), first_blocks.begin() + 3, second.blocks().begin()));
  EXPECT_EQ(cache.prefix_hit_tokens(), 12);
  EXPECT_EQ(cache.prefix_queried_tokens(), 14 + 14 + 17);
  EXPECT_NEAR(cache.prefix_hit_rate(), 12.0 / 45.0, 1e-12);
  cache.free(second);
  EXPECT_EQ(cache.num_free_blocks(), 16);
  EXPECT_TRUE(cache.check_invariants());
}

TEST(KvCache, RecomputesTheBlockHoldingTheLastPromptToken) {
  KvCacheManager cache({.num_blocks = 8, .block_size = 4});
  const auto prompt = iota_tokens(8);
  BlockTable first;
  ASSERT_EQ(cache.allocate(first, prompt), 0);
  cache.mark_computed(first, prompt, 8);
  BlockTable second;
  // Both blocks are cached, but the last token needs logits: only the first block is reused.
  ASSERT_EQ(cache.allocate(second, prompt), 4);
  EXPECT_EQ(second.blocks()[0], first.blocks()[0]);
  EXPECT_NE(second.blocks()[1], first.blocks()[1]);
  EXPECT_EQ(cache.num_used_blocks(), 3);  // the shared block counts once
  cache.free(first);
  cache.free(second);
  EXPECT_EQ(cache.num_free_blocks(), 8);
}

TEST(KvCache, HashChainSeparatesEqualBlocksUnderDifferentParents) {
  KvCacheManager cache({.num_blocks = 16, .block_size = 4});
  const std::vector<std::int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 50};
  const std::vector<std::int32_t> b = {9, 9, 9, 9, 5, 6, 7, 8, 60};
  BlockTable table_a;
  BlockTable table_b;
  ASSERT_EQ(cache.allocate(table_a, a), 0);
  ASSERT_EQ(cache.allocate(table_b, b), 0);
  cache.mark_computed(table_a, a, 9);
  cache.mark_computed(table_b, b, 9);
  EXPECT_EQ(cache.num_cached_blocks(), 4);  // {5,6,7,8} twice, under different parents

  const std::vector<std::int32_t> c = {9, 9, 9, 9, 5, 6, 7, 8, 70};
  BlockTable table_c;
  ASSERT_EQ(cache.allocate(table_c, c), 8);
  EXPECT_EQ(table_c.blocks()[0], table_b.blocks()[0]);
  EXPECT_EQ(table_c.blocks()[1], table_b.blocks()[1]);
  EXPECT_NE(table_c.blocks()[1], table_a.blocks()[1]);

  const std::vector<std::int32_t> d = {0, 0, 0, 0, 5, 6, 7, 8, 80};
  BlockTable table_d;
  ASSERT_EQ(cache.allocate(table_d, d), 0);
  for (BlockTable* table : {&table_a, &table_b, &table_c, &table_d}) cache.free(*table);
  EXPECT_EQ(cache.num_free_blocks(), 16);
  EXPECT_TRUE(cache.check_invariants());
}

// Prompts of 3 tokens with block size 2: one cached full block and one partial block each.
TEST(KvCache, EvictsUnreferencedCachedBlocksLeastRecentlyUsedFirst) {
  KvCacheManager cache({.num_blocks = 6, .block_size = 2});
  const std::vector<std::vector<std::int32_t>> prompts = {{1, 1, 9}, {2, 2, 9}, {3, 3, 9}};
  for (const auto& prompt : prompts) {
    BlockTable table;
    ASSERT_EQ(cache.allocate(table, prompt), 0);
    cache.mark_computed(table, prompt, 3);
    cache.free(table);
  }
  EXPECT_EQ(cache.num_cached_blocks(), 3);
  // Touch the oldest, so the second becomes least recently used.
  {
    BlockTable table;
    ASSERT_EQ(cache.allocate(table, prompts[0]), 2);
    cache.free(table);
  }
  // Four fresh blocks: three uncached ones first, then one eviction.
  BlockTable filler;
  ASSERT_EQ(cache.allocate(filler, iota_tokens(8, 100)), 0);
  EXPECT_EQ(cache.num_cached_blocks(), 2);
  cache.free(filler);

  auto cached_tokens = [&](const std::vector<std::int32_t>& prompt) {
    BlockTable table;
    const auto cached = cache.allocate(table, prompt);
    cache.free(table);
    return cached.value_or(-1);
  };
  EXPECT_EQ(cached_tokens(prompts[1]), 0);  // evicted
  EXPECT_EQ(cached_tokens(prompts[0]), 2);
  EXPECT_EQ(cached_tokens(prompts[2]), 2);
  EXPECT_TRUE(cache.check_invariants());
}

TEST(KvCache, ForkCopiesTheSharedPartialBlockOnFirstWrite) {
  KvCacheManager cache({.num_blocks = 8, .block_size = 4});
  BlockTable parent;
  ASSERT_EQ(cache.allocate(parent, iota_tokens(6)), 0);
  BlockTable child;
  cache.fork(parent, child);
  EXPECT_EQ(table_of(child), table_of(parent));
  EXPECT_EQ(cache.num_used_blocks(), 2);

  std::vector<BlockCopy> copies;
  ASSERT_TRUE(cache.append_slots(child, 1, copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, parent.blocks()[1]);
  EXPECT_EQ(copies[0].dst, child.blocks()[1]);
  EXPECT_EQ(child.blocks()[0], parent.blocks()[0]);  // full blocks stay shared
  EXPECT_EQ(child.num_tokens(), 7);

  copies.clear();
  ASSERT_TRUE(cache.append_slots(parent, 1, copies));
  EXPECT_TRUE(copies.empty());  // the parent holds its block alone again
  EXPECT_EQ(cache.num_used_blocks(), 3);
  cache.free(parent);
  cache.free(child);
  EXPECT_EQ(cache.num_free_blocks(), 8);
  EXPECT_TRUE(cache.check_invariants());
}

TEST(KvCache, ForkOnABlockBoundaryNeedsNoCopy) {
  KvCacheManager cache({.num_blocks = 8, .block_size = 4});
  BlockTable parent;
  ASSERT_EQ(cache.allocate(parent, iota_tokens(8)), 0);
  BlockTable child;
  cache.fork(parent, child);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(cache.append_slots(child, 1, copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(child.blocks().size(), 3u);
  cache.free(child);
  cache.free(parent);
  EXPECT_EQ(cache.num_free_blocks(), 8);
}

TEST(KvCache, FailedRequestsChangeNothing) {
  KvCacheManager cache({.num_blocks = 4, .block_size = 4});
  BlockTable table;
  EXPECT_FALSE(cache.allocate(table, iota_tokens(17)).has_value());
  EXPECT_TRUE(table.empty());
  EXPECT_FALSE(cache.allocate(table, iota_tokens(9), 2).has_value());  // would leave 1 free
  ASSERT_EQ(cache.allocate(table, iota_tokens(9), 1), 0);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(cache.append_slots(table, 7, copies));  // fills block 4
  EXPECT_FALSE(cache.append_slots(table, 1, copies));
  EXPECT_EQ(table.num_tokens(), 16);
  EXPECT_EQ(table.blocks().size(), 4u);
  EXPECT_FALSE(cache.can_allocate(1));
  cache.free(table);
  EXPECT_TRUE(cache.can_allocate(16));
  EXPECT_TRUE(cache.check_invariants());
}

TEST(KvCache, PrefixCachingCanBeTurnedOff) {
  KvCacheManager cache({.num_blocks = 8, .block_size = 4, .enable_prefix_caching = false});
  const auto prompt = iota_tokens(12);
  BlockTable first;
  ASSERT_EQ(cache.allocate(first, prompt), 0);
  cache.mark_computed(first, prompt, 12);
  EXPECT_EQ(cache.num_cached_blocks(), 0);
  BlockTable second;
  ASSERT_EQ(cache.allocate(second, prompt), 0);
  EXPECT_EQ(cache.prefix_hit_rate(), 0.0);
  cache.free(first);
  cache.free(second);
  EXPECT_EQ(cache.num_free_blocks(), 8);
}

// Thousands of random allocations, appends, forks and frees over shared prefixes: after every
// operation the pool's invariants hold and every live sequence reads back its own tokens; at
// the end the pool is whole again.
TEST(KvCache, RandomizedOperationsKeepThePoolConsistent) {
  for (const bool prefix_caching : {true, false}) {
    constexpr std::int32_t kBlocks = 64;
    constexpr std::int32_t kBlockSize = 4;
    KvCacheManager cache(
        {.num_blocks = kBlocks, .block_size = kBlockSize, .enable_prefix_caching = prefix_caching});
    FakeKvMemory memory(kBlocks, kBlockSize);
    struct Live {
      BlockTable table;
      std::vector<std::int32_t> tokens;
    };
    std::vector<std::unique_ptr<Live>> live;
    std::mt19937 rng(1234);
    auto uniform = [&](int low, int high) { return std::uniform_int_distribution(low, high)(rng); };
    const std::vector<std::vector<std::int32_t>> bases = {iota_tokens(40), iota_tokens(24, 7),
                                                          std::vector<std::int32_t>(30, 3)};
    std::vector<BlockCopy> copies;
    std::int64_t hits = 0;
    int num_copies = 0;
    int num_refusals = 0;

    for (int op = 0; op < 5000; ++op) {
      const int kind = uniform(0, 9);
      if (kind < 3 || live.empty()) {  // a new sequence
        auto sequence = std::make_unique<Live>();
        const auto& base = bases[static_cast<std::size_t>(uniform(0, 2))];
        sequence->tokens.assign(base.begin(), base.begin() + uniform(1, 24));
        for (int i = uniform(0, 6); i > 0; --i) sequence->tokens.push_back(uniform(0, 2));
        const auto count = static_cast<std::int32_t>(sequence->tokens.size());
        const auto cached = cache.allocate(sequence->table, sequence->tokens);
        if (cached) {
          ASSERT_EQ(*cached % kBlockSize, 0);
          ASSERT_LT(*cached, count);
          hits += *cached;
          ASSERT_TRUE(memory.holds(sequence->table, sequence->tokens, *cached));
          memory.write(sequence->table, sequence->tokens, *cached, count);
          cache.mark_computed(sequence->table, sequence->tokens, count);
          live.push_back(std::move(sequence));
        } else {
          ASSERT_TRUE(sequence->table.empty());
          ++num_refusals;
        }
      } else if (kind < 7) {  // decode-style growth
        Live& sequence =
            *live[static_cast<std::size_t>(uniform(0, static_cast<int>(live.size()) - 1))];
        const int grow = uniform(1, 3);
        copies.clear();
        if (cache.append_slots(sequence.table, grow, copies)) {
          memory.copy(copies);
          num_copies += static_cast<int>(copies.size());
          const auto begin = static_cast<std::int32_t>(sequence.tokens.size());
          for (int i = 0; i < grow; ++i) sequence.tokens.push_back(uniform(0, 2));
          memory.write(sequence.table, sequence.tokens, begin, begin + grow);
          cache.mark_computed(sequence.table, sequence.tokens, begin + grow);
        } else {
          ASSERT_TRUE(copies.empty());
        }
      } else if (kind < 8) {  // n > 1
        const Live& parent =
            *live[static_cast<std::size_t>(uniform(0, static_cast<int>(live.size()) - 1))];
        auto child = std::make_unique<Live>();
        cache.fork(parent.table, child->table);
        child->tokens = parent.tokens;
        live.push_back(std::move(child));
      } else {
        const auto index = static_cast<std::size_t>(uniform(0, static_cast<int>(live.size()) - 1));
        cache.free(live[index]->table);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
      }
      ASSERT_TRUE(cache.check_invariants()) << "after operation " << op;
      std::vector<std::int32_t> referenced;
      for (const auto& sequence : live) {
        ASSERT_EQ(sequence->table.num_tokens(), static_cast<std::int32_t>(sequence->tokens.size()));
        ASSERT_TRUE(memory.holds(sequence->table, sequence->tokens, sequence->table.num_tokens()))
            << "after operation " << op;
        referenced.insert(referenced.end(), sequence->table.blocks().begin(),
                          sequence->table.blocks().end());
      }
      std::sort(referenced.begin(), referenced.end());
      referenced.erase(std::unique(referenced.begin(), referenced.end()), referenced.end());
      ASSERT_EQ(static_cast<std::int32_t>(referenced.size()), cache.num_used_blocks());
    }
    for (auto& sequence : live) cache.free(sequence->table);
    EXPECT_EQ(cache.num_free_blocks(), kBlocks);
    EXPECT_TRUE(cache.check_invariants());
    EXPECT_GT(num_copies, 0);
    EXPECT_GT(num_refusals, 0);  // the pool really ran dry along the way
    if (prefix_caching) {
      EXPECT_GT(hits, 0);
      EXPECT_EQ(cache.prefix_hit_tokens(), hits);
    } else {
      EXPECT_EQ(hits, 0);
    }
  }
}

}  // namespace
}  // namespace tern::engine
