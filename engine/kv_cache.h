#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/batch_plan.h"

namespace tern::engine {

// One sequence's KV blocks. The sequence owns it; only KvCacheManager changes it.
class BlockTable {
 public:
  std::span<const std::int32_t> blocks() const { return blocks_; }
  std::int32_t num_tokens() const { return num_tokens_; }  // token slots reserved
  bool empty() const { return blocks_.empty(); }

 private:
  friend class KvCacheManager;
  std::vector<std::int32_t> blocks_;
  std::int32_t num_tokens_ = 0;
  std::int32_t num_hashed_blocks_ = 0;  // leading full blocks whose chain hash is known
  std::uint64_t last_hash_ = 0;         // the hash of the last of those: the next one's parent
};

struct KvCacheOptions {
  std::int32_t num_blocks = 0;
  std::int32_t block_size = 16;
  bool enable_prefix_caching = true;
};

// The block manager (DESIGN §4): a pool of fixed-size KV blocks with reference counts, and a
// prefix index from hash(parent block's hash, block tokens) to a full block whose KV is
// written. A block nobody references stays cached until allocation needs it, least recently
// used first, so a later prompt with the same prefix skips that computation.
class KvCacheManager {
 public:
  explicit KvCacheManager(const KvCacheOptions& options);

  std::int32_t block_size() const { return block_size_; }
  std::int32_t blocks_for(std::int32_t num_tokens) const {
    return (num_tokens + block_size_ - 1) / block_size_;
  }

  // Whether `num_tokens` fresh tokens fit, not counting prefix hits.
  bool can_allocate(std::int32_t num_tokens) const { return blocks_for(num_tokens) <= num_free_; }

  // Gives an empty table room for `tokens`, reusing each cached full block of their prefix; the
  // block holding the last token is never reused, so that token is computed and has logits.
  // Returns the number of cached tokens, or nullopt (changing nothing) when fewer than
  // `reserve_blocks` free blocks would be left.
  std::optional<std::int32_t> allocate(BlockTable& table, std::span<const std::int32_t> tokens,
                                       std::int32_t reserve_blocks = 0);

  // Grows the table by `num_tokens` slots. A last block shared after fork() is copied first,
  // and the copy is appended to `copies`. Returns false (changing nothing) when out of blocks.
  bool append_slots(BlockTable& table, std::int32_t num_tokens, std::vector<BlockCopy>& copies);

  // Publishes the full blocks among the first `num_computed` of `tokens` (the sequence's
  // tokens so far) into the prefix index, once their KV is written.
  void mark_computed(BlockTable& table, std::span<const std::int32_t> tokens,
                     std::int32_t num_computed);

  // Makes the empty `child` share all of `parent`'s blocks (n > 1 sampling). Whichever writes
  // first into a shared partial last block gets a copy of it.
  void fork(const BlockTable& parent, BlockTable& child);

  // Returns the table's blocks on finish, cancel or preemption, and empties it.
  void free(BlockTable& table);

  std::int32_t num_blocks() const { return static_cast<std::int32_t>(blocks_.size()); }
  std::int32_t num_free_blocks() const { return num_free_; }  // includes evictable cached blocks
  std::int32_t num_used_blocks() const { return num_blocks() - num_free_; }
  std::int32_t num_cached_blocks() const { return num_cached_; }  // in the prefix index
  double usage() const;
  double prefix_hit_rate() const;  // hit tokens / queried prompt tokens, over the lifetime
  std::int64_t prefix_hit_tokens() const { return hit_tokens_; }
  std::int64_t prefix_queried_tokens() const { return queried_tokens_; }

  // Debug aid for tests: checks the pool's internal invariants.
  bool check_invariants() const;

 private:
  struct Block {
    std::int32_t ref_count = 0;
    std::int32_t prev_free = -1;  // LRU free list links while ref_count == 0
    std::int32_t next_free = -1;
    std::int32_t next_in_bucket = -1;
    bool hashed = false;
    std::uint64_t hash = 0;
    std::uint64_t parent_hash = 0;
  };

  std::int32_t find_cached(std::uint64_t hash, std::uint64_t parent_hash,
                           std::span<const std::int32_t> tokens) const;
  void publish(std::int32_t block, std::uint64_t hash, std::uint64_t parent_hash,
               std::span<const std::int32_t> tokens);
  void unpublish(std::int32_t block);
  std::int32_t take_free_block();
  void unlink_free(std::int32_t block);
  void link_free(std::int32_t block, bool at_back);
  std::span<const std::int32_t> block_tokens(std::int32_t block) const;

  std::int32_t block_size_;
  bool enable_prefix_caching_;
  std::vector<Block> blocks_;
  // A cached block's tokens, so that a hash collision can never hand out the wrong KV.
  std::vector<std::int32_t> tokens_;
  std::vector<std::int32_t> buckets_;  // heads of the prefix index's chains
  std::int32_t free_head_ = -1;        // front: taken next (uncached, then least recently used)
  std::int32_t free_tail_ = -1;
  std::int32_t num_free_ = 0;
  std::int32_t num_cached_ = 0;
  std::int64_t hit_tokens_ = 0;
  std::int64_t queried_tokens_ = 0;
};

}  // namespace tern::engine
