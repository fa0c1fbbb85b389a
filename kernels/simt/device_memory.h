#pragma once

// The emulated device's global memory. Kernel arguments that are pointers must point into one of
// its allocations (or be null): a kernel handed host memory fails at launch on the emulator, as
// it would fault on a GPU. The emulated cudaMalloc and the tests' DeviceBuffer allocate here.

#include <cstddef>
#include <cstring>
#include <new>
#include <span>
#include <utility>
#include <vector>

namespace tern::simt {

// 256-byte aligned like cudaMalloc; nullptr when out of memory. Thread-safe.
void* device_allocate(std::size_t bytes);
// False (and nothing freed) when pointer is not the start of a live allocation.
bool device_free(void* pointer);
// memset, except that zeroing whole pages of a large allocation gives them back to the host.
void device_fill(void* pointer, int byte, std::size_t bytes);
// Whether pointer lies within a live allocation or just past its end (an empty range's end).
bool is_device_address(const void* pointer);
std::size_t device_allocation_count();

// One device allocation of `count` T, filled from host values or with a byte pattern.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count, unsigned char fill = 0)
      : data_(static_cast<T*>(device_allocate(count * sizeof(T) == 0 ? 1 : count * sizeof(T)))),
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
