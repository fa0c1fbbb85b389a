#pragma once

// The emulated device's global memory. Kernel arguments that are pointers must point into one of
// its allocations (or be null): a kernel handed host memory fails at launch on the emulator, as
// it would fault on a GPU. The emulated cudaMalloc and the tests' DeviceBuffer allocate here.
//
// Each allocation keeps its exact size and lies between two guard bands of at least
// kGuardBandBytes, filled with a pattern of its own (under ASan also poisoned, so that ASan
// stops at the access itself). check_guard_bands() finds a band that something wrote: the
// emulator calls it after every launch, so a kernel that writes past its buffer fails with
// out_of_bounds. Each allocation's pattern differs, so that a kernel copying past the end of one
// buffer into past the end of another still changes a band. A word of the pattern read as a float
// (and its upper half as a __half) is a NaN, so a kernel that reads past its buffer tends to
// spread NaNs a test sees.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::simt {

inline constexpr std::size_t kGuardBandBytes = 256;

// 256-byte aligned like cudaMalloc; nullptr when out of memory. `label` names the allocation in
// out-of-bounds reports (the emulated device runtime passes what it is for). Thread-safe.
void* device_allocate(std::size_t bytes, std::string_view label = {});
// False (and nothing freed) when pointer is not the start of a live allocation. A guard band
// found overwritten at this point is reported on stderr and counted (guard_violations_at_free).
bool device_free(void* pointer);
// memset, except that zeroing whole pages of a large allocation gives them back to the host.
void device_fill(void* pointer, int byte, std::size_t bytes);
// Whether pointer lies within a live allocation or just past its end (an empty range's end).
bool is_device_address(const void* pointer);
// Whether [pointer, pointer + bytes) lies within one live allocation.
bool is_device_range(const void* pointer, std::size_t bytes);
std::size_t device_allocation_count();

// A guard band found changed: the allocation, and the changed bytes' offsets from its start
// (negative before it; at or past `bytes` after its end).
struct GuardViolation {
  std::uintptr_t allocation = 0;
  std::size_t bytes = 0;
  std::string label;
  std::ptrdiff_t first_changed = 0;
  std::ptrdiff_t last_changed = 0;
};
// What a report says of it: the allocation (label, size, address) and which bytes changed.
std::string describe(const GuardViolation& violation);

// Checks every live allocation's guard bands and restores those found changed, so that one stray
// write is reported once; returns the first changed band, by address.
std::optional<GuardViolation> check_guard_bands();
// Guard bands found changed by device_free since the process started.
std::size_t guard_violations_at_free();

// One device allocation of `count` T, filled from host values or with a byte pattern.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count, unsigned char fill = 0)
      : data_(static_cast<T*>(device_allocate(count * sizeof(T)))),
        count_(data_ != nullptr ? count : 0) {
    if (data_ != nullptr) std::memset(static_cast<void*>(data_), fill, count_ * sizeof(T));
  }
  explicit DeviceBuffer(std::span<const T> values) : DeviceBuffer(values.size()) {
    if (data_ != nullptr && !values.empty())
      std::memcpy(static_cast<void*>(data_), values.data(), values.size_bytes());
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) device_free(data_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::span<T> view() const { return {data_, count_}; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Allocates std::vector storage in device memory, for tests that hand vectors to kernels.
template <class T>
struct DeviceAllocator {
  using value_type = T;
  DeviceAllocator() = default;
  template <class U>
  DeviceAllocator(const DeviceAllocator<U>&) {}  // NOLINT: rebinding is implicit
  T* allocate(std::size_t count) {
    void* pointer = device_allocate(count * sizeof(T));
    if (pointer == nullptr) throw std::bad_alloc();
    return static_cast<T*>(pointer);
  }
  void deallocate(T* pointer, std::size_t) { device_free(pointer); }
  friend bool operator==(const DeviceAllocator&, const DeviceAllocator&) { return true; }
};

template <class T>
using DeviceVector = std::vector<T, DeviceAllocator<T>>;

}  // namespace tern::simt
