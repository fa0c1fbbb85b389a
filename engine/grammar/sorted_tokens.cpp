#include "engine/grammar/sorted_tokens.h"

#include <algorithm>

namespace tern::engine::grammar {

SortedTokens::SortedTokens(std::vector<std::int32_t> ids, const std::vector<std::string>& spellings)
    : ids_(std::move(ids)) {
  auto spelling = [&](std::int32_t id) -> const std::string& {
    return spellings[static_cast<std::size_t>(id)];
  };
  std::sort(ids_.begin(), ids_.end(),
            [&](std::int32_t a, std::int32_t b) { return spelling(a) < spelling(b); });
  offsets_.reserve(ids_.size() + 1);
  offsets_.push_back(0);
  shared_prefix_.assign(ids_.size(), 0);
  for (std::size_t i = 0; i < ids_.size(); ++i) {
    const std::string& current = spelling(ids_[i]);
    bytes_ += current;
    offsets_.push_back(bytes_.size());
    longest_ = std::max(longest_, current.size());
    group_end_[static_cast<std::uint8_t>(current[0])] = i + 1;
    if (i == 0) continue;
    const std::string& previous = spelling(ids_[i - 1]);
    const std::size_t limit = std::min(previous.size(), current.size());
    std::size_t n = 0;
    while (n < limit && previous[n] == current[n]) ++n;
    shared_prefix_[i] = static_cast<std::int32_t>(n);
  }
}

}  // namespace tern::engine::grammar
