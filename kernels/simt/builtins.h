#pragma once

// The CUDA built-ins for kernel source compiled by the host compiler against the emulator.
// Kernel sources do not include this directly: they include kernels/simt/portable.h.

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

#include "kernels/simt/device_math.h"
#include "kernels/simt/runtime.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

using dim3 = ::tern::simt::Dim3;
using uint3 = ::tern::simt::Dim3;

#define threadIdx (::tern::simt::detail::thread_idx())
#define blockIdx (::tern::simt::detail::block_idx())
#define blockDim (::tern::simt::detail::block_dim())
#define gridDim (::tern::simt::detail::grid_dim())
inline constexpr int warpSize = 32;

inline void __syncthreads(std::source_location at = std::source_location::current()) {
  ::tern::simt::detail::sync_threads(::tern::simt::detail::site_of(at));
}

inline void __syncwarp(unsigned mask = 0xffffffffu,
                       std::source_location at = std::source_location::current()) {
  using ::tern::simt::detail::WarpOp;
  ::tern::simt::detail::warp_op(WarpOp::sync, mask, 0, 0, 32, ::tern::simt::detail::site_of(at));
}

inline unsigned __activemask() {
  return ::tern::simt::detail::active_mask();
}

namespace tern::simt::detail {

template <class T>
concept ShuffleValue = std::is_trivially_copyable_v<T> && sizeof(T) <= 8;

template <ShuffleValue T>
T shuffle(WarpOp op, unsigned mask, T value, int arg, int width, std::source_location at) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  const std::uint64_t out = warp_op(op, mask, bits, arg, width, site_of(at));
  T result;
  std::memcpy(static_cast<void*>(&result), &out, sizeof(T));
  return result;
}

}  // namespace tern::simt::detail

template <::tern::simt::detail::ShuffleValue T>
T __shfl_sync(unsigned mask, T value, int src_lane, int width = warpSize,
              std::source_location at = std::source_location::current()) {
  return ::tern::simt::detail::shuffle(::tern::simt::detail::WarpOp::shfl, mask, value, src_lane,
                                       width, at);
}
template <::tern::simt::detail::ShuffleValue T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = warpSize,
                 std::source_location at = std::source_location::current()) {
  return ::tern::simt::detail::shuffle(::tern::simt::detail::WarpOp::shfl_up, mask, value,
                                       static_cast<int>(delta), width, at);
}
template <::tern::simt::detail::ShuffleValue T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = warpSize,
                   std::source_location at = std::source_location::current()) {
  return ::tern::simt::detail::shuffle(::tern::simt::detail::WarpOp::shfl_down, mask, value,
                                       static_cast<int>(delta), width, at);
}
template <::tern::simt::detail::ShuffleValue T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = warpSize,
                  std::source_location at = std::source_location::current()) {
  return ::tern::simt::detail::shuffle(::tern::simt::detail::WarpOp::shfl_xor, mask, value,
                                       lane_mask, width, at);
}

inline unsigned __ballot_sync(unsigned mask, int predicate,
                              std::source_location at = std::source_location::current()) {
  return static_cast<unsigned>(::tern::simt::detail::warp_op(::tern::simt::detail::WarpOp::ballot,
                                                             mask, predicate != 0, 0, 32,
                                                             ::tern::simt::detail::site_of(at)));
}
inline int __any_sync(unsigned mask, int predicate,
                      std::source_location at = std::source_location::current()) {
  return static_cast<int>(::tern::simt::detail::warp_op(::tern::simt::detail::WarpOp::any, mask,
                                                        predicate != 0, 0, 32,
                                                        ::tern::simt::detail::site_of(at)));
}
inline int __all_sync(unsigned mask, int predicate,
                      std::source_location at = std::source_location::current()) {
  return static_cast<int>(::tern::simt::detail::warp_op(::tern::simt::detail::WarpOp::all, mask,
                                                        predicate != 0, 0, 32,
                                                        ::tern::simt::detail::site_of(at)));
}

// Atomics: a block's threads switch only at barriers and warp intrinsics, and blocks run one
// after another, so a plain read-modify-write is atomic here.
template <class T>
T atomicAdd(T* address, std::type_identity_t<T> value) {
  const T old = *address;
  *address = old + value;
  return old;
}
template <class T>
T atomicMax(T* address, std::type_identity_t<T> value) {
  const T old = *address;
  *address = old < value ? value : old;
  return old;
}
template <class T>
T atomicMin(T* address, std::type_identity_t<T> value) {
  const T old = *address;
  *address = value < old ? value : old;
  return old;
}
template <class T>
T atomicExch(T* address, std::type_identity_t<T> value) {
  const T old = *address;
  *address = value;
  return old;
}
template <class T>
T atomicCAS(T* address, std::type_identity_t<T> compare, std::type_identity_t<T> value) {
  const T old = *address;
  if (old == compare) *address = value;
  return old;
}
