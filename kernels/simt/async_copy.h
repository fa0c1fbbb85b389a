#pragma once

// Asynchronous copies from global to shared memory (cp.async), for kernel source that nvcc and
// the host compiler both take. A thread starts copies, closes them into a group
// (cp_async_commit_group), and waits until at most N of its groups are still in flight
// (cp_async_wait_group<N>); only then may it touch their shared bytes, and other threads only
// after a barrier as well. Under nvcc each is one PTX instruction. The emulator
// copies when the group is waited for and fails the launch with async_copy_pending when a
// thread reads or writes shared bytes a copy still owns, or returns with a copy never waited for;
// with misaligned_access when either end of a copy is not aligned to its size; and with
// invalid_argument when the destination leaves its shared array.

#include <cstdint>

#if defined(__CUDACC__)
#define TERN_ASYNC_DEVICE __device__ __forceinline__
#else
#include <source_location>

#include "kernels/simt/runtime.h"
#include "kernels/simt/shared_span.h"
#define TERN_ASYNC_DEVICE inline
#endif

namespace tern::kernels::cuda {

// Where the copy goes through: .ca (L1 and L2; 4, 8 or 16 bytes) or .cg (L2 only; 16 bytes).
enum class AsyncCache { all_levels, global_only };

// cp.async.{ca,cg}.shared.global: `bytes` bytes from `source` (global) to element `index` of the
// shared array `shared` and on.
template <int bytes, AsyncCache cache = AsyncCache::all_levels, class Shared>
TERN_ASYNC_DEVICE void cp_async(const Shared& shared, unsigned index, const void* source
#if !defined(__CUDACC__)
                                ,
                                std::source_location at = std::source_location::current()
#endif
) {
  static_assert(bytes == 4 || bytes == 8 || bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  static_assert(cache == AsyncCache::all_levels || bytes == 16, "cp.async.cg copies 16 bytes");
#if defined(__CUDACC__)
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(&shared[index]));
  if constexpr (cache == AsyncCache::global_only) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(source)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(address), "l"(source),
                 "n"(bytes)
                 : "memory");
  }
#else
  shared.start_async_copy(index, source, bytes, at);
#endif
}

// cp.async.commit_group: the thread's copies started since the last commit become one group.
TERN_ASYNC_DEVICE void cp_async_commit_group() {
#if defined(__CUDACC__)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#else
  ::tern::simt::detail::async_copy_commit();
#endif
}

// cp.async.wait_group: waits until at most `pending` of the thread's committed groups are in
// flight (copies not yet committed are not waited for).
template <int pending>
TERN_ASYNC_DEVICE void cp_async_wait_group(
#if !defined(__CUDACC__)
    std::source_location at = std::source_location::current()
#endif
) {
#if defined(__CUDACC__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
#else
  ::tern::simt::detail::async_copy_wait(pending, ::tern::simt::detail::site_of(at));
#endif
}

}  // namespace tern::kernels::cuda

#undef TERN_ASYNC_DEVICE
