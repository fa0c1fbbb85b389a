#pragma once

// What kernel source includes so that nvcc and the host compiler (against the SIMT emulator)
// both take it. Kernels write shared memory and launches through these macros:
//   TERN_SHARED(float, sums, 8);            // __shared__ float sums[8];
//   TERN_DYNAMIC_SHARED(float, buffer);     // extern __shared__ float buffer[];
//   TERN_LAUNCH(kernel, grid, block, shared_bytes, stream, args...);  // kernel<<<...>>>(args...)
// Under the emulator TERN_LAUNCH runs with the OS thread's ScopedSchedule and leaves its status
// in tern::simt::last_launch_status(); `stream` is ignored.

#if defined(__CUDACC__)

#define TERN_SHARED(type, name, count) __shared__ type name[count]
#define TERN_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#define TERN_LAUNCH(kernel, grid, block, shared_bytes, stream, ...) \
  kernel<<<(grid), (block), (shared_bytes), (stream)>>>(__VA_ARGS__)

#else

#include "kernels/simt/builtins.h"
#include "kernels/simt/launch.h"

#define TERN_SHARED(type, name, count) \
  auto& name = ::tern::simt::detail::shared_array<type, (count)>()
#define TERN_DYNAMIC_SHARED(type, name) \
  type* name = reinterpret_cast<type*>(::tern::simt::detail::shared_dynamic())
#define TERN_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                    \
  (static_cast<void>(stream),                                                          \
   ::tern::simt::last_launch_status() = ::tern::simt::launch(                          \
       #kernel, ::tern::simt::default_config((grid), (block), (shared_bytes)), kernel, \
       __VA_ARGS__))

#endif
