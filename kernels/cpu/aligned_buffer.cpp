#include "kernels/cpu/aligned_buffer.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tern::kernels {

AlignedBuffer AlignedBuffer::with_huge_pages(std::size_t bytes) {
  constexpr std::size_t kHugePage = 2u << 20;
  const std::size_t whole_pages = (rounded(bytes) + kHugePage - 1) / kHugePage * kHugePage;
  auto* data = static_cast<std::byte*>(std::aligned_alloc(kHugePage, whole_pages));
  if (data == nullptr) return AlignedBuffer(bytes);
#if defined(__linux__)
  (void)madvise(data, whole_pages, MADV_HUGEPAGE);  // a hint: refused, the pages are 4 KiB
#endif
  std::fill_n(data, whole_pages, std::byte{0});
  return AlignedBuffer(bytes, data);
}

}  // namespace tern::kernels
