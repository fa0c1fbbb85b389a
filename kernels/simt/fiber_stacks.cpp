#include "kernels/simt/fiber_stacks.h"

#include <sys/mman.h>
#include <unistd.h>

#include "kernels/simt/asan.h"

#if defined(TERN_SIMT_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace tern::simt {

FiberStacks::FiberStacks(std::size_t count, std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  bytes_ = (bytes + page - 1) / page * page;
  stride_ = bytes_ + page;
  total_ = stride_ * count;
  void* mapped = mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return;
  base_ = static_cast<char*>(mapped);
  for (std::size_t i = 0; i < count; ++i) mprotect(base_ + i * stride_, page, PROT_NONE);
}

FiberStacks::~FiberStacks() {
  if (base_ == nullptr) return;
#if defined(TERN_SIMT_ASAN)
  // A finished fiber never returns from its outermost frames, so their redzones stay poisoned in
  // ASan's shadow; memory mapped later at these addresses (a model file, say) would read as them.
  __asan_unpoison_memory_region(base_, total_);
#endif
  munmap(base_, total_);
}

boost::context::stack_context FiberStacks::stack(std::size_t index) const {
  boost::context::stack_context context;
  context.size = bytes_;
  // Stacks grow down: sp is the top of the slot, above its guard page.
  context.sp = base_ + index * stride_ + stride_;
  return context;
}

}  // namespace tern::simt
