#include "engine/token_counts.h"

#include <algorithm>
#include <bit>

namespace tern::engine {

TokenCounts::TokenCounts(std::size_t max_distinct) {
  // At most half full, so probes stay short.
  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(2 * max_distinct, 16));
  slots_.resize(capacity);
  order_.reserve(max_distinct);
  mask_ = static_cast<std::uint32_t>(capacity - 1);
}

TokenCounts::Entry* TokenCounts::find_or_insert(std::int32_t token) {
  if (slots_.empty() || token < 0) return nullptr;
  // Fibonacci hashing spreads consecutive ids over the table.
  std::uint32_t slot = (static_cast<std::uint32_t>(token) * 2654435769u) & mask_;
  for (;;) {
    Entry& entry = slots_[slot];
    if (entry.token == token) return &entry;
    if (entry.token < 0) {
      // Full to the size it was built for: more distinct tokens than the sequence can hold.
      if (order_.size() == order_.capacity()) return nullptr;
      entry.token = token;
      order_.push_back(slot);
      return &entry;
    }
    slot = (slot + 1) & mask_;
  }
}

void TokenCounts::add_prompt_token(std::int32_t token) {
  if (Entry* entry = find_or_insert(token)) entry->in_prompt = true;
}

void TokenCounts::add_output_token(std::int32_t token) {
  if (Entry* entry = find_or_insert(token)) ++entry->output_count;
}

}  // namespace tern::engine
