#include "engine/tokenizer/merge_table.h"

namespace tern::engine {

void MergeTable::reserve(std::size_t count) {
  std::size_t capacity = 16;
  while (capacity < count * 2) capacity *= 2;
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  size_ = 0;
  for (const auto& slot : old) {
    if (slot.key != kEmpty) {
      insert(static_cast<std::int32_t>(slot.key >> 32),
             static_cast<std::int32_t>(slot.key & 0xFFFFFFFFu), slot.rule);
    }
  }
}

void MergeTable::grow() {
  reserve(slots_.empty() ? 8 : slots_.size());
}

void MergeTable::insert(std::int32_t left, std::int32_t right, MergeRule rule) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const std::uint64_t key = key_of(left, right);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t index = hash(key) & mask;; index = (index + 1) & mask) {
    if (slots_[index].key == key) return;
    if (slots_[index].key == kEmpty) {
      slots_[index] = {key, rule};
      ++size_;
      return;
    }
  }
}

std::optional<MergeRule> MergeTable::find(std::int32_t left, std::int32_t right) const {
  if (slots_.empty()) return std::nullopt;
  const std::uint64_t key = key_of(left, right);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t index = hash(key) & mask;; index = (index + 1) & mask) {
    if (slots_[index].key == key) return slots_[index].rule;
    if (slots_[index].key == kEmpty) return std::nullopt;
  }
}

}  // namespace tern::engine
