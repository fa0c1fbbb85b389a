#pragma once

#include <boost/context/stack_context.hpp>
#include <cstddef>

namespace tern::simt {

// Fixed-size stacks for a block's fibers, mapped once and reused by every block of a launch.
// Each stack has an inaccessible guard page below it, so an overflow faults instead of
// overwriting the neighbouring thread's stack.
class FiberStacks {
 public:
  FiberStacks(std::size_t count, std::size_t bytes);
  ~FiberStacks();
  FiberStacks(const FiberStacks&) = delete;
  FiberStacks& operator=(const FiberStacks&) = delete;

  bool valid() const { return base_ != nullptr; }
  boost::context::stack_context stack(std::size_t index) const;
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_;
  std::size_t stride_;
  std::size_t total_;
  char* base_ = nullptr;
};

// A Boost.Context stack allocator that hands out one slot of a FiberStacks and frees nothing.
struct FiberStackSlot {
  const FiberStacks* stacks;
  std::size_t index;
  boost::context::stack_context allocate() { return stacks->stack(index); }
  void deallocate(boost::context::stack_context&) noexcept {}
};

}  // namespace tern::simt
