#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tern::engine {

// The distinct tokens of one sequence (prompt and output) with how often each was generated: an
// open-addressing table sized once for the most distinct tokens the sequence can hold, so its
// memory follows the sequence's length, not the vocabulary, and add() never allocates.
class TokenCounts {
 public:
  struct Entry {
    std::int32_t token = -1;  // -1: empty slot
    std::int32_t output_count = 0;
    bool in_prompt = false;
  };

  TokenCounts() = default;
  // Room for `max_distinct` tokens.
  explicit TokenCounts(std::size_t max_distinct);

  void add_prompt_token(std::int32_t token);
  void add_output_token(std::int32_t token);

  // Every distinct token seen, in first-seen order.
  template <typename Visit>
  void for_each(Visit visit) const {
    for (const std::uint32_t slot : order_) visit(slots_[slot]);
  }
  std::size_t size() const { return order_.size(); }

 private:
  Entry* find_or_insert(std::int32_t token);

  std::vector<Entry> slots_;
  std::vector<std::uint32_t> order_;
  std::uint32_t mask_ = 0;
};

}  // namespace tern::engine
