#pragma once

// Device memory, copies and errors for cuda_kernel_bench: one source for the real CUDA runtime
// (cuda_kernel_bench) and the SIMT emulator's (cuda_kernel_bench_emulated, TERN_SIMT_EMULATED).
// Calls report failure as false plus a message naming what failed; nothing throws.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "kernels/cuda/cuda_api.h"

namespace tern::cuda_bench {

// The CUDA status's name, and on the emulator the failed launch's own message.
std::string describe_error(cudaError_t status);

// Caps the bytes the bench's DeviceBuffers hold at once (--memory-limit-mib); 0 for no cap. An
// allocation past the cap fails as if the device were full, naming the cap.
void set_memory_limit(std::size_t bytes);

// cudaMalloc'd memory freed with its scope. A failed allocation leaves ok() false and error()
// naming what the buffer was for, its size and the reason.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, std::string_view what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  bool ok() const { return data_ != nullptr; }
  const std::string& error() const { return error_; }
  std::size_t bytes() const { return bytes_; }
  void* data() const { return data_; }
  // The buffer as an array of T, from element `offset` on.
  template <class T>
  T* as(std::size_t offset = 0) const {
    return static_cast<T*>(data_) + offset;
  }

 private:
  void release();

  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::string error_;
};

// Host to device, and device to device, synchronously.
bool upload(void* device, const void* host, std::size_t bytes, std::string& error);
bool copy_on_device(void* to, const void* from, std::size_t bytes, std::string& error);

// Fills `bytes` at `device` with `pattern` repeated, the last repeat cut short: one upload, then
// copies on the device that double the filled part. Rows of a pattern of whole rows stay whole
// when `bytes` is whole rows too.
bool fill_repeating(void* device, std::size_t bytes, std::span<const std::byte> pattern,
                    std::string& error);

// What the records' first line says of the device.
struct DeviceInfo {
  std::string name;
  bool emulated = false;
  int compute_major = 0;
  int compute_minor = 0;
  long long memory_bytes = 0;
  long long l2_bytes = 0;
  int multiprocessors = 0;
};
bool query_device(DeviceInfo& info, std::string& error);

}  // namespace tern::cuda_bench
