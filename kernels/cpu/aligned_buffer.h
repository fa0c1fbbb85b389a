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

  // The same, asking the kernel for transparent huge pages (2 MiB) before the first touch: for
  // large buffers that decode streams through (the repacked weight tiles), where 4 KiB pages
  // cost TLB misses and stop the hardware prefetcher at every page. Without THP it is an
  // ordinary buffer.
  static AlignedBuffer with_huge_pages(std::size_t bytes);

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::byte* pointer) const { std::free(pointer); }
  };
  AlignedBuffer(std::size_t bytes, std::byte* data) : size_(bytes), data_(data) {}
  static std::size_t rounded(std::size_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment + kAlignment;
  }

  std::size_t size_ = 0;
  std::unique_ptr<std::byte, Free> data_;
};

}  // namespace tern::kernels
