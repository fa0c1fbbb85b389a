#include "engine/backend/cuda/device_runtime.h"

#include <utility>

#include <fmt/format.h>

namespace tern::engine::cuda {

Status DeviceRuntime::launched(int status, std::string_view kernel) const {
  if (status == 0) return Status::success();
  return Error{
      fmt::format("{}: kernel {} failed: {}", name(), kernel, kernels().error_name(status))};
}

DeviceAllocation::~DeviceAllocation() {
  if (memory_ != nullptr) runtime_->release(memory_);
}

DeviceAllocation::DeviceAllocation(DeviceAllocation&& other) noexcept
    : runtime_(other.runtime_),
      memory_(std::exchange(other.memory_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceAllocation& DeviceAllocation::operator=(DeviceAllocation&& other) noexcept {
  std::swap(runtime_, other.runtime_);
  std::swap(memory_, other.memory_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

Expected<DeviceAllocation> DeviceAllocation::create(DeviceRuntime& runtime, std::uint64_t bytes,
                                                    std::string_view what) {
  Expected<void*> memory = runtime.allocate(bytes, what);
  if (!memory) return memory.error();
  return DeviceAllocation(&runtime, *memory, bytes);
}

}  // namespace tern::engine::cuda
