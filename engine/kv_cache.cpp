#include "engine/kv_cache.h"

#include <algorithm>
#include <bit>
#include <cassert>

namespace tern::engine {
namespace {

// The parent of a sequence's first block.
constexpr std::uint64_t kRootHash = 0x6a09e667f3bcc908ULL;

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Chaining the parent's hash in makes a block's key stand for its whole prefix, so equal tokens
// after different prefixes never share KV.
std::uint64_t hash_block(std::uint64_t parent_hash, std::span<const std::int32_t> tokens) {
  std::uint64_t hash = mix(parent_hash ^ 0x9e3779b97f4a7c15ULL);
  for (const std::int32_t token : tokens) hash = mix(hash + static_cast<std::uint32_t>(token));
  return hash;
}

}  // namespace

KvCacheManager::KvCacheManager(const KvCacheOptions& options)
    : block_size_(std::max(options.block_size, 1)),
      enable_prefix_caching_(options.enable_prefix_caching),
      blocks_(static_cast<std::size_t>(std::max(options.num_blocks, 0))),
      buckets_(std::bit_ceil(std::max<std::size_t>(blocks_.size(), 1)), -1) {
  if (enable_prefix_caching_)
    tokens_.resize(blocks_.size() * static_cast<std::size_t>(block_size_));
  for (std::int32_t block = 0; block < num_blocks(); ++block) link_free(block, true);
}

std::optional<std::int32_t> KvCacheManager::allocate(BlockTable& table,
                                                     std::span<const std::int32_t> tokens,
                                                     std::int32_t reserve_blocks) {
  assert(table.empty());
  const auto num_tokens = static_cast<std::int32_t>(tokens.size());
  const std::int32_t needed = blocks_for(num_tokens);
  std::int32_t hits_in_free_list = 0;
  std::uint64_t parent_hash = kRootHash;
  table.blocks_.clear();  // holds the hits until we know everything fits
  if (enable_prefix_caching_ && num_tokens > 0) {
    const std::int32_t cacheable_blocks = (num_tokens - 1) / block_size_;
    for (std::int32_t i = 0; i < cacheable_blocks; ++i) {
      const auto block_tokens = tokens.subspan(static_cast<std::size_t>(i) * block_size_,
                                               static_cast<std::size_t>(block_size_));
      const std::uint64_t hash = hash_block(parent_hash, block_tokens);
      const std::int32_t block = find_cached(hash, parent_hash, block_tokens);
      if (block < 0) break;
      table.blocks_.push_back(block);
      hits_in_free_list += blocks_[block].ref_count == 0 ? 1 : 0;
      parent_hash = hash;
    }
  }
  const auto hits = static_cast<std::int32_t>(table.blocks_.size());
  if (num_free_ - hits_in_free_list - (needed - hits) < reserve_blocks) {
    table.blocks_.clear();
    return std::nullopt;
  }
  for (const std::int32_t block : table.blocks_) {
    if (blocks_[block].ref_count++ == 0) unlink_free(block);
  }
  while (static_cast<std::int32_t>(table.blocks_.size()) < needed) {
    const std::int32_t block = take_free_block();
    blocks_[block].ref_count = 1;
    table.blocks_.push_back(block);
  }
  table.num_tokens_ = num_tokens;
  table.num_hashed_blocks_ = hits;
  table.last_hash_ = parent_hash;
  queried_tokens_ += num_tokens;
  hit_tokens_ += static_cast<std::int64_t>(hits) * block_size_;
  return hits * block_size_;
}

bool KvCacheManager::append_slots(BlockTable& table, std::int32_t num_tokens,
                                  std::vector<BlockCopy>& copies) {
  if (num_tokens <= 0) return true;
  const std::int32_t new_total = table.num_tokens_ + num_tokens;
  const bool copy_last =
      table.num_tokens_ % block_size_ != 0 && blocks_[table.blocks_.back()].ref_count > 1;
  const std::int32_t new_blocks =
      blocks_for(new_total) - static_cast<std::int32_t>(table.blocks_.size());
  if (new_blocks + (copy_last ? 1 : 0) > num_free_) return false;
  if (copy_last) {
    const std::int32_t shared = table.blocks_.back();
    const std::int32_t own = take_free_block();
    --blocks_[shared].ref_count;  // stays above zero: someone else still holds it
    blocks_[own].ref_count = 1;
    table.blocks_.back() = own;
    copies.push_back({shared, own});
  }
  for (std::int32_t i = 0; i < new_blocks; ++i) {
    const std::int32_t block = take_free_block();
    blocks_[block].ref_count = 1;
    table.blocks_.push_back(block);
  }
  table.num_tokens_ = new_total;
  return true;
}

void KvCacheManager::mark_computed(BlockTable& table, std::span<const std::int32_t> tokens,
                                   std::int32_t num_computed) {
  if (!enable_prefix_caching_) return;
  const std::int32_t known =
      std::min({num_computed, table.num_tokens_, static_cast<std::int32_t>(tokens.size())});
  const std::int32_t full_blocks = known / block_size_;
  for (std::int32_t i = table.num_hashed_blocks_; i < full_blocks; ++i) {
    const auto block_tokens = tokens.subspan(static_cast<std::size_t>(i) * block_size_,
                                             static_cast<std::size_t>(block_size_));
    const std::uint64_t hash = hash_block(table.last_hash_, block_tokens);
    const std::int32_t block = table.blocks_[static_cast<std::size_t>(i)];
    // A twin computed by another sequence in the meantime stays the indexed one; ours is
    // simply not cached.
    if (!blocks_[block].hashed && find_cached(hash, table.last_hash_, block_tokens) < 0) {
      publish(block, hash, table.last_hash_, block_tokens);
    }
    table.last_hash_ = hash;
    table.num_hashed_blocks_ = i + 1;
  }
}

void KvCacheManager::fork(const BlockTable& parent, BlockTable& child) {
  assert(child.empty());
  child = parent;
  for (const std::int32_t block : child.blocks_) ++blocks_[block].ref_count;
}

void KvCacheManager::free(BlockTable& table) {
  // Last block first: within the LRU order a prefix's tail is then evicted before its head,
  // which would make the tail unreachable anyway.
  for (auto it = table.blocks_.rbegin(); it != table.blocks_.rend(); ++it) {
    Block& block = blocks_[*it];
    assert(block.ref_count > 0);
    if (--block.ref_count == 0) link_free(*it, block.hashed);
  }
  table.blocks_.clear();
  table.num_tokens_ = 0;
  table.num_hashed_blocks_ = 0;
  table.last_hash_ = 0;
}

double KvCacheManager::usage() const {
  return blocks_.empty() ? 0.0 : static_cast<double>(num_used_blocks()) / num_blocks();
}

double KvCacheManager::prefix_hit_rate() const {
  return queried_tokens_ == 0 ? 0.0 : static_cast<double>(hit_tokens_) / queried_tokens_;
}

std::int32_t KvCacheManager::find_cached(std::uint64_t hash, std::uint64_t parent_hash,
                                         std::span<const std::int32_t> tokens) const {
  for (std::int32_t block = buckets_[hash & (buckets_.size() - 1)]; block >= 0;
       block = blocks_[block].next_in_bucket) {
    const Block& candidate = blocks_[block];
    if (candidate.hash == hash && candidate.parent_hash == parent_hash &&
        std::ranges::equal(block_tokens(block), tokens)) {
      return block;
    }
  }
  return -1;
}

void KvCacheManager::publish(std::int32_t block, std::uint64_t hash, std::uint64_t parent_hash,
                             std::span<const std::int32_t> tokens) {
  Block& entry = blocks_[block];
  entry.hashed = true;
  entry.hash = hash;
  entry.parent_hash = parent_hash;
  std::ranges::copy(tokens, tokens_.begin() + static_cast<std::ptrdiff_t>(block) * block_size_);
  std::int32_t& head = buckets_[hash & (buckets_.size() - 1)];
  entry.next_in_bucket = head;
  head = block;
  ++num_cached_;
}

void KvCacheManager::unpublish(std::int32_t block) {
  Block& entry = blocks_[block];
  std::int32_t* link = &buckets_[entry.hash & (buckets_.size() - 1)];
  while (*link != block) link = &blocks_[*link].next_in_bucket;
  *link = entry.next_in_bucket;
  entry.next_in_bucket = -1;
  entry.hashed = false;
  --num_cached_;
}

std::int32_t KvCacheManager::take_free_block() {
  const std::int32_t block = free_head_;
  assert(block >= 0);
  unlink_free(block);
  if (blocks_[block].hashed) unpublish(block);  // eviction
  return block;
}

void KvCacheManager::unlink_free(std::int32_t block) {
  Block& entry = blocks_[block];
  (entry.prev_free >= 0 ? blocks_[entry.prev_free].next_free : free_head_) = entry.next_free;
  (entry.next_free >= 0 ? blocks_[entry.next_free].prev_free : free_tail_) = entry.prev_free;
  entry.prev_free = entry.next_free = -1;
  --num_free_;
}

// Cached blocks go to the back (most recently used); uncached ones to the front, so they are
// reused before any cached KV is evicted.
void KvCacheManager::link_free(std::int32_t block, bool at_back) {
  Block& entry = blocks_[block];
  if (at_back) {
    entry.prev_free = free_tail_;
    entry.next_free = -1;
    (free_tail_ >= 0 ? blocks_[free_tail_].next_free : free_head_) = block;
    free_tail_ = block;
  } else {
    entry.prev_free = -1;
    entry.next_free = free_head_;
    (free_head_ >= 0 ? blocks_[free_head_].prev_free : free_tail_) = block;
    free_head_ = block;
  }
  ++num_free_;
}

std::span<const std::int32_t> KvCacheManager::block_tokens(std::int32_t block) const {
  return std::span<const std::int32_t>(tokens_).subspan(
      static_cast<std::size_t>(block) * block_size_, static_cast<std::size_t>(block_size_));
}

bool KvCacheManager::check_invariants() const {
  std::int32_t free_count = 0;
  std::int32_t previous = -1;
  for (std::int32_t block = free_head_; block >= 0; block = blocks_[block].next_free) {
    if (blocks_[block].ref_count != 0 || blocks_[block].prev_free != previous) return false;
    previous = block;
    if (++free_count > num_blocks()) return false;  // a cycle
  }
  if (previous != free_tail_ || free_count != num_free_) return false;
  std::int32_t referenced = 0;
  std::int32_t hashed = 0;
  for (std::int32_t block = 0; block < num_blocks(); ++block) {
    const Block& entry = blocks_[block];
    if (entry.ref_count < 0) return false;
    referenced += entry.ref_count > 0 ? 1 : 0;
    if (!entry.hashed) continue;
    ++hashed;
    if (find_cached(entry.hash, entry.parent_hash, block_tokens(block)) != block) return false;
  }
  return referenced + num_free_ == num_blocks() && hashed == num_cached_;
}

}  // namespace tern::engine
