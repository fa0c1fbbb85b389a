#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tern::engine::grammar {

// Some tokens sorted by their bytes, so that tokens sharing a prefix sit together: a trie walked
// in order. Their bytes are stored in that order too, so a walk reads memory front to back.
class SortedTokens {
 public:
  SortedTokens() = default;
  // `spellings[id]` for each of `ids`.
  SortedTokens(std::vector<std::int32_t> ids, const std::vector<std::string>& spellings);

  std::size_t size() const { return ids_.size(); }
  std::span<const std::int32_t> ids() const { return ids_; }
  std::string_view bytes(std::size_t i) const {
    return std::string_view(bytes_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  // How many leading bytes token i shares with token i - 1.
  std::size_t shared_prefix(std::size_t i) const {
    return static_cast<std::size_t>(shared_prefix_[i]);
  }
  // The index past the last token whose first byte is token i's.
  std::size_t first_byte_group_end(std::size_t i) const {
    return group_end_[static_cast<std::uint8_t>(bytes_[offsets_[i]])];
  }
  std::size_t longest() const { return longest_; }

 private:
  std::vector<std::int32_t> ids_;
  std::string bytes_;
  std::vector<std::size_t> offsets_;
  std::vector<std::int32_t> shared_prefix_;
  std::array<std::size_t, 256> group_end_{};
  std::size_t longest_ = 0;
};

}  // namespace tern::engine::grammar
