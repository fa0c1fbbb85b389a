#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tern::engine {

// Finds stop strings in streamed text. Text that could still turn out to be the start of a stop
// string is held back until it either completes one or cannot, so a stop string is never
// emitted, not even in part.
class StopChecker {
 public:
  StopChecker() = default;
  explicit StopChecker(std::span<const std::string> stop_strings);

  struct Result {
    std::string_view text;     // safe to emit now; valid until the next call
    bool stopped = false;      // a stop string matched; `text` is everything before it
    std::string_view matched;  // the stop string that matched (the earliest in the text)
  };

  Result push(std::string_view delta);

  // The end of the stream without a match: releases the held-back text.
  std::string_view flush();

  bool empty() const { return stop_strings_.empty(); }

 private:
  std::size_t held_back_length() const;

  std::vector<std::string> stop_strings_;
  std::string pending_;  // held-back text, then the new delta
  std::string emitted_;
};

}  // namespace tern::engine
