#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>

namespace tern::kernels {

// A zero-initialised byte buffer aligned to a cache line, so SIMD loads never split lines.
class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t bytes)
      : size_(bytes),
        data_(static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded(bytes)))) {
    if (data_) std::fill_n(data_.get(), rounded(bytes), std::byte{0});
  }

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::byte* pointer) const { std::free(pointer); }
  };
  static std::size_t rounded(std::size_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment + kAlignment;
  }

  std::size_t size_ = 0;
  std::unique_ptr<std::byte, Free> data_;
};

}  // namespace tern::kernels
