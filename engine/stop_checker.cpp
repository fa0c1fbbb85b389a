#include "engine/stop_checker.h"

#include <algorithm>

namespace tern::engine {

StopChecker::StopChecker(std::span<const std::string> stop_strings) {
  std::size_t longest = 0;
  for (const std::string& stop : stop_strings) {
    if (stop.empty()) continue;
    stop_strings_.push_back(stop);
    longest = std::max(longest, stop.size());
  }
  // Typical deltas are a few bytes, so this keeps the per-token path free of allocations.
  pending_.reserve(2 * longest + 64);
  emitted_.reserve(2 * longest + 64);
}

// The longest tail of pending_ that is a proper prefix of some stop string.
std::size_t StopChecker::held_back_length() const {
  std::size_t held = 0;
  for (const std::string& stop : stop_strings_) {
    const std::size_t most = std::min(stop.size() - 1, pending_.size());
    for (std::size_t length = most; length > held; --length) {
      if (std::string_view(pending_).substr(pending_.size() - length) ==
          std::string_view(stop).substr(0, length)) {
        held = length;
        break;
      }
    }
  }
  return held;
}

StopChecker::Result StopChecker::push(std::string_view delta) {
  if (stop_strings_.empty()) return {delta, false, {}};
  pending_.append(delta);
  std::size_t first_match = std::string::npos;
  std::string_view matched;
  for (const std::string& stop : stop_strings_) {
    const std::size_t position = pending_.find(stop);
    if (position < first_match) {
      first_match = position;
      matched = stop;
    }
  }
  if (first_match != std::string::npos) {
    emitted_.assign(pending_, 0, first_match);
    pending_.clear();
    return {emitted_, true, matched};
  }
  const std::size_t ready = pending_.size() - held_back_length();
  emitted_.assign(pending_, 0, ready);
  pending_.erase(0, ready);
  return {emitted_, false, {}};
}

std::string_view StopChecker::flush() {
  emitted_.swap(pending_);
  pending_.clear();
  return emitted_;
}

}  // namespace tern::engine
