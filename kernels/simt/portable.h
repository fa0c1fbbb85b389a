#pragma once

// What kernel source includes so that nvcc and the host compiler (against the SIMT emulator)
// both take it. Kernels write shared memory and launches through these macros:
//   TERN_SHARED(float, sums, 8);            // __shared__ float sums[8];
//   TERN_SHARED_ALIGNED(unsigned short, staged, 64, 16);  // __shared__ __align__(16) ...
//   TERN_DYNAMIC_SHARED(float, buffer);     // extern __shared__ float buffer[];
//   TERN_LAUNCH(kernel, grid, block, shared_bytes, stream, args...);  // kernel<<<...>>>(args...)
// and vector loads and stores through load_aligned<V>(p) / store_aligned(p, v), which check the
// alignment on the emulator (x86 would not fault on a misaligned float4) and are plain accesses
// under nvcc. A kernel name with template arguments that contain a comma goes in parentheses.
// Under the emulator TERN_LAUNCH runs with the OS thread's ScopedSchedule and leaves its status
// in tern::simt::last_launch_status() and its error for cudaGetLastError(); `stream` is ignored.

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define TERN_SHARED(type, name, count) __shared__ type name[count]
#define TERN_SHARED_ALIGNED(type, name, count, alignment) \
  __shared__ __align__(alignment)                         \
  type name[count]
#define TERN_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#define TERN_LAUNCH(kernel, grid, block, shared_bytes, stream, ...) \
  kernel<<<(grid), (block), (shared_bytes), (stream)>>>(__VA_ARGS__)

namespace tern::kernels::cuda {

template <class V>
__device__ __forceinline__ V load_aligned(const void* address) {
  return *static_cast<const V*>(address);
}
template <class V>
__device__ __forceinline__ void store_aligned(void* address, V value) {
  *static_cast<V*>(address) = value;
}

}  // namespace tern::kernels::cuda

#else

#include <cstdint>
#include <source_location>
#include <string>

#include "kernels/simt/builtins.h"
#include "kernels/simt/launch.h"
#include "kernels/simt/shared_span.h"

#define TERN_SHARED(type, name, count) \
  const auto name = ::tern::simt::detail::shared_span<type>((count), #name)
#define TERN_SHARED_ALIGNED(type, name, count, alignment) \
  const auto name = ::tern::simt::detail::shared_span<type>((count), #name, (alignment))
#define TERN_DYNAMIC_SHARED(type, name) \
  const auto name = ::tern::simt::detail::dynamic_shared_span<type>(#name)
#define TERN_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                              \
  (static_cast<void>(stream),                                                                    \
   ::tern::simt::record_launch(                                                                  \
       ::tern::simt::launch(#kernel,                                                             \
                            ::tern::simt::default_config((grid), (block), (shared_bytes),        \
                                                         reinterpret_cast<const void*>(kernel)), \
                            kernel, __VA_ARGS__)))

namespace tern::kernels::cuda {

namespace detail {
inline bool aligned_for(const void* address, std::size_t alignment, const char* what,
                        std::source_location at) {
  if (reinterpret_cast<std::uintptr_t>(address) % alignment == 0) return true;
  ::tern::simt::detail::report_fault(
      ::tern::simt::LaunchErrorKind::misaligned_access, ::tern::simt::detail::site_of(at),
      std::string(what) + " of " + std::to_string(alignment) + " bytes at an address that is not " +
          std::to_string(alignment) + "-byte aligned");
  return false;
}
}  // namespace detail

template <class V>
V load_aligned(const void* address, std::source_location at = std::source_location::current()) {
  if (!detail::aligned_for(address, alignof(V), "vector load", at)) return V{};
  V value;
  std::memcpy(&value, address, sizeof(V));
  return value;
}
template <class V>
void store_aligned(void* address, V value,
                   std::source_location at = std::source_location::current()) {
  if (!detail::aligned_for(address, alignof(V), "vector store", at)) return;
  std::memcpy(address, &value, sizeof(V));
}

}  // namespace tern::kernels::cuda

#endif
