#include "kernels/simt/fiber_stacks.h"

#include <sys/mman.h>
#include <unistd.h>

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
  if (base_ != nullptr) munmap(base_, total_);
}

boost::context::stack_context FiberStacks::stack(std::size_t index) const {
  boost::context::stack_context context;
  context.size = bytes_;
  // Stacks grow down: sp is the top of the slot, above its guard page.
  context.sp = base_ + index * stride_ + stride_;
  return context;
}

}  // namespace tern::simt
