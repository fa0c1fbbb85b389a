#pragma once

// BPE merge rules as (left id, right id) -> (rank, merged id), in an open-addressing table: the
// merge loop does one lookup per neighbouring pair, so this is the hottest map in encoding.
#include <cstdint>
#include <optional>
#include <vector>

namespace tern::engine {

struct MergeRule {
  std::int32_t rank;
  std::int32_t merged_id;
};

class MergeTable {
 public:
  void reserve(std::size_t count);
  // Keeps the first rule for a pair, as the references do when merges repeat.
  void insert(std::int32_t left, std::int32_t right, MergeRule rule);
  std::optional<MergeRule> find(std::int32_t left, std::int32_t right) const;
  std::size_t size() const { return size_; }

 private:
  struct Slot {
    std::uint64_t key = kEmpty;
    MergeRule rule{};
  };
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  static std::uint64_t key_of(std::int32_t left, std::int32_t right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) |
           static_cast<std::uint32_t>(right);
  }
  static std::uint64_t hash(std::uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return key;
  }
  void grow();

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace tern::engine
