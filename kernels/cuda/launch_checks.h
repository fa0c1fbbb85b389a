#pragma once

// Host-side argument checks that launchers share.

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

// More floats than any device holds (4 TiB): a span past it is a bad stride, not memory.
constexpr long long kMaxDeviceFloats = 1LL << 40;

// The floats that `rows` rows of `width`, `stride` floats apart, span (0 for no rows), or -1
// when that exceeds kMaxDeviceFloats (so the product never overflows). Needs width >= 1 and
// stride >= width.
inline long long strided_rows_floats(long long rows, long long stride, long long width) {
  if (rows <= 0) return 0;
  if (width > kMaxDeviceFloats || (rows > 1 && stride > (kMaxDeviceFloats - width) / (rows - 1)))
    return -1;
  return (rows - 1) * stride + width;
}

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte: a kernel that writes one while
// reading the other would then race across threads.
inline bool device_spans_overlap(const void* a, std::size_t a_bytes, const void* b,
                                 std::size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto a_begin = reinterpret_cast<std::uintptr_t>(a);
  const auto b_begin = reinterpret_cast<std::uintptr_t>(b);
  return a_begin < b_begin + b_bytes && b_begin < a_begin + a_bytes;
}

TERN_CUDA_NAMESPACE_END
