#include "tests/bench/cuda_kernel_bench_device.h"

#include <algorithm>
#include <utility>

#if defined(TERN_SIMT_EMULATED)
#include "kernels/simt/launch.h"
#endif

namespace tern::cuda_bench {
namespace {

std::size_t memory_limit = 0;
std::size_t memory_held = 0;

}  // namespace

std::string describe_error(cudaError_t status) {
  std::string text = cudaGetErrorName(status);
#if defined(TERN_SIMT_EMULATED)
  const simt::LaunchStatus& launch = simt::last_launch_status();
  if (!launch.ok()) text += " (" + launch.message + ")";
#endif
  return text;
}

void set_memory_limit(std::size_t bytes) {
  memory_limit = bytes;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, std::string_view what) {
  const std::string name =
      "device memory for " + std::string(what) + " (" + std::to_string(bytes) + " bytes)";
  if (bytes == 0) {
    error_ = name + ": an empty buffer";
    return;
  }
  if (memory_limit != 0 && memory_held + bytes > memory_limit) {
    error_ = name + ": over --memory-limit-mib (" + std::to_string(memory_held) +
             " bytes held already, of " + std::to_string(memory_limit) + ")";
    return;
  }
  void* raw = nullptr;
  if (const cudaError_t status = cudaMalloc(&raw, bytes); status != cudaSuccess) {
    cudaGetLastError();  // an allocation failure is not sticky; clear it for the next case
    error_ = name + ": cudaMalloc failed, " + describe_error(status);
    return;
  }
  data_ = raw;
  bytes_ = bytes;
  memory_held += bytes;
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      error_(std::move(other.error_)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    error_ = std::move(other.error_);
  }
  return *this;
}

void DeviceBuffer::release() {
  if (data_ == nullptr) return;
  cudaFree(data_);
  memory_held -= bytes_;
  data_ = nullptr;
  bytes_ = 0;
}

bool upload(void* device, const void* host, std::size_t bytes, std::string& error) {
  const cudaError_t status = cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
  if (status == cudaSuccess) return true;
  error = "copy of " + std::to_string(bytes) + " bytes to the device: " + describe_error(status);
  return false;
}

bool copy_on_device(void* to, const void* from, std::size_t bytes, std::string& error) {
  const cudaError_t status = cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToDevice);
  if (status == cudaSuccess) return true;
  error = "copy of " + std::to_string(bytes) + " bytes on the device: " + describe_error(status);
  return false;
}

bool fill_repeating(void* device, std::size_t bytes, std::span<const std::byte> pattern,
                    std::string& error) {
  if (pattern.empty()) {
    error = "fill_repeating: an empty pattern";
    return false;
  }
  auto* base = static_cast<std::byte*>(device);
  std::size_t filled = std::min(bytes, pattern.size());
  if (!upload(base, pattern.data(), filled, error)) return false;
  while (filled < bytes) {
    const std::size_t count = std::min(filled, bytes - filled);
    if (!copy_on_device(base + filled, base, count, error)) return false;
    filled += count;
  }
  return true;
}

bool query_device(DeviceInfo& info, std::string& error) {
#if defined(TERN_SIMT_EMULATED)
  (void)error;
  info.name = "SIMT emulator (kernels run on the host CPU)";
  info.emulated = true;
  return true;
#else
  int count = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess || count < 1) {
    error = status != cudaSuccess ? "no CUDA device: " + describe_error(status)
                                  : std::string("no CUDA device");
    return false;
  }
  cudaDeviceProp properties{};
  if (const cudaError_t status = cudaGetDeviceProperties(&properties, 0); status != cudaSuccess) {
    error = "cudaGetDeviceProperties: " + describe_error(status);
    return false;
  }
  info.name = properties.name;
  info.compute_major = properties.major;
  info.compute_minor = properties.minor;
  info.memory_bytes = static_cast<long long>(properties.totalGlobalMem);
  info.l2_bytes = properties.l2CacheSize;
  info.multiprocessors = properties.multiProcessorCount;
  return true;
#endif
}

}  // namespace tern::cuda_bench
