#pragma once

// Checked shared memory for kernels compiled against the emulator. TERN_SHARED and
// TERN_DYNAMIC_SHARED give a SharedSpan, and every element access goes through a SharedRef that
// reports it to the emulator, which fails the launch on an index out of the array, a read of
// bytes no thread of the block has written, and two threads touching the same bytes (one of them
// writing) with no __syncthreads between them, nor a warp intrinsic of their warp when both are
// in one warp. Under nvcc the macros give plain __shared__ arrays, so kernels index shared
// memory as `name[i]` (read, write, compound assignment) and never keep a pointer into it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <string>
#include <type_traits>

#include "kernels/simt/runtime.h"

namespace tern::simt {

struct SharedArrayInfo {
  const char* name;
  detail::Site declared;
  std::size_t count;  // elements
};

namespace detail {
// Checks an access of `bytes` bytes at element `index` of the array and records it.
void shared_access(const SharedArrayInfo& array, std::size_t index, const std::byte* address,
                   std::size_t bytes, bool write);
void shared_out_of_bounds(const SharedArrayInfo& array, long long index);
// Starts a cp.async of `bytes` bytes from `source` into element `index` of the array (at
// `destination`): the bytes belong to the copy until the thread waits for its group.
void async_copy_start(const SharedArrayInfo& array, std::size_t index, std::byte* destination,
                      const void* source, std::size_t bytes, Site site);
}  // namespace detail

template <class T>
class SharedRef {
 public:
  SharedRef(std::byte* address, const SharedArrayInfo& array, std::size_t index)
      : address_(address), array_(array), index_(index) {}

  operator T() const {  // NOLINT: reads as the element
    detail::shared_access(array_, index_, address_, sizeof(T), false);
    T value;
    std::memcpy(&value, address_, sizeof(T));
    return value;
  }
  SharedRef& operator=(const T& value) {
    detail::shared_access(array_, index_, address_, sizeof(T), true);
    std::memcpy(address_, &value, sizeof(T));
    return *this;
  }
  SharedRef& operator=(const SharedRef& other) { return *this = static_cast<T>(other); }

  template <class U>
  SharedRef& operator+=(const U& v) {
    return *this = static_cast<T>(static_cast<T>(*this) + v);
  }
  template <class U>
  SharedRef& operator-=(const U& v) {
    return *this = static_cast<T>(static_cast<T>(*this) - v);
  }
  template <class U>
  SharedRef& operator*=(const U& v) {
    return *this = static_cast<T>(static_cast<T>(*this) * v);
  }
  template <class U>
  SharedRef& operator/=(const U& v) {
    return *this = static_cast<T>(static_cast<T>(*this) / v);
  }
  template <class U>
  SharedRef& operator|=(const U& v) {
    return *this = static_cast<T>(static_cast<T>(*this) | v);
  }
  template <class U>
  SharedRef& operator&=(const U& v) {
    return *this = static_cast<T>(static_cast<T>(*this) & v);
  }
  SharedRef& operator++() { return *this += 1; }
  SharedRef& operator--() { return *this -= 1; }

  // For atomics on shared memory: the raw address, whose accesses are not checked.
  T* operator&() const { return reinterpret_cast<T*>(address_); }  // NOLINT

 private:
  std::byte* address_;
  const SharedArrayInfo& array_;
  std::size_t index_;
};

template <class T>
class SharedSpan {
 public:
  SharedSpan(std::byte* base, SharedArrayInfo array) : base_(base), array_(array) {}

  template <class Index>
  SharedRef<T> operator[](Index index) const {
    static_assert(std::is_integral_v<Index>, "shared memory is indexed by an integer");
    const long long i = static_cast<long long>(index);
    if (i < 0 || static_cast<unsigned long long>(i) >= array_.count) {
      detail::shared_out_of_bounds(array_, i);
      return SharedRef<T>(base_, array_, 0);
    }
    return SharedRef<T>(base_ + static_cast<std::size_t>(i) * sizeof(T), array_,
                        static_cast<std::size_t>(i));
  }

  // cp.async's start (kernels/simt/async_copy.h): `bytes` bytes from `source` into element
  // `index` and on, checked for the array's end.
  void start_async_copy(std::size_t index, const void* source, std::size_t bytes,
                        std::source_location at = std::source_location::current()) const {
    if (index >= array_.count || (array_.count - index) * sizeof(T) < bytes) {
      detail::shared_out_of_bounds(array_, static_cast<long long>(index + bytes / sizeof(T) - 1));
      return;
    }
    detail::async_copy_start(array_, index, base_ + index * sizeof(T), source, bytes,
                             detail::site_of(at));
  }

  // `bytes` bytes from element `index` as one 16-byte aligned row (ldmatrix's), checked for the
  // array's end and the alignment and recorded as a read of them; null after failing the launch.
  const std::byte* checked_row(std::size_t index, std::size_t bytes,
                               std::source_location at = std::source_location::current()) const {
    if (index >= array_.count || (array_.count - index) * sizeof(T) < bytes) {
      detail::shared_out_of_bounds(array_, static_cast<long long>(index + bytes / sizeof(T) - 1));
      return nullptr;
    }
    const std::byte* address = base_ + index * sizeof(T);
    if (reinterpret_cast<std::uintptr_t>(address) % 16 != 0) {
      detail::report_fault(LaunchErrorKind::misaligned_access, detail::site_of(at),
                           "a row of " + std::to_string(bytes) + " bytes at element " +
                               std::to_string(index) + " of shared array '" + array_.name +
                               "', which is not 16-byte aligned");
      return nullptr;
    }
    detail::shared_access(array_, index, address, bytes, false);
    return address;
  }

 private:
  std::byte* base_;
  SharedArrayInfo array_;
};

namespace detail {

// `alignment` above alignof(T) is TERN_SHARED_ALIGNED's (__align__ under nvcc).
template <class T>
SharedSpan<T> shared_span(std::size_t count, const char* name, std::size_t alignment = alignof(T),
                          std::source_location at = std::source_location::current()) {
  static_assert(std::is_trivially_copyable_v<T>, "__shared__ holds trivially copyable types");
  std::byte* bytes = shared_static(sizeof(T) * count, std::max(alignment, alignof(T)), site_of(at));
  return SharedSpan<T>(bytes, {name, site_of(at), count});
}

template <class T>
SharedSpan<T> dynamic_shared_span(const char* name,
                                  std::source_location at = std::source_location::current()) {
  return SharedSpan<T>(shared_dynamic(), {name, site_of(at), dynamic_shared_bytes() / sizeof(T)});
}

}  // namespace detail
}  // namespace tern::simt
