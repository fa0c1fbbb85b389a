#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace tern::engine::grammar {

// One bit per token of a vocabulary: the tokens a constrained output may take next.
class TokenMask {
 public:
  TokenMask() = default;
  explicit TokenMask(std::int32_t size) { resize(size); }

  void resize(std::int32_t size) {
    size_ = size;
    words_.assign((static_cast<std::size_t>(size) + 63) / 64, 0);
  }
  std::int32_t size() const { return size_; }
  void clear() { std::fill(words_.begin(), words_.end(), 0); }
  void set(std::int32_t token) { words_[index(token)] |= bit(token); }
  void reset(std::int32_t token) { words_[index(token)] &= ~bit(token); }
  bool test(std::int32_t token) const {
    return token >= 0 && token < size_ && (words_[index(token)] & bit(token)) != 0;
  }
  std::int32_t count() const {
    std::int32_t n = 0;
    for (const std::uint64_t w : words_) n += std::popcount(w);
    return n;
  }
  std::span<std::uint64_t> words() { return words_; }
  std::span<const std::uint64_t> words() const { return words_; }

 private:
  static std::size_t index(std::int32_t token) { return static_cast<std::size_t>(token) >> 6; }
  static std::uint64_t bit(std::int32_t token) { return std::uint64_t{1} << (token & 63); }

  std::int32_t size_ = 0;
  std::vector<std::uint64_t> words_;
};

}  // namespace tern::engine::grammar
