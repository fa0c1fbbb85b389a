#pragma once

// Helpers for the DeviceRuntime tests (emulated and cudart).

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/backend/cuda/device_runtime.h"

namespace tern::engine::cuda {

inline DeviceAllocation must_allocate(DeviceRuntime& runtime, std::uint64_t bytes,
                                      std::string_view what) {
  Expected<DeviceAllocation> memory = DeviceAllocation::create(runtime, bytes, what);
  EXPECT_TRUE(memory.ok()) << memory.error().message;
  return memory.ok() ? std::move(memory).value() : DeviceAllocation();
}

// The allocation's contents, after everything issued on `stream`.
template <class T>
std::vector<T> download(DeviceRuntime& runtime, const DeviceAllocation& memory, Stream stream) {
  std::vector<T> values(memory.bytes() / sizeof(T));
  const Status copied = runtime.copy_to_host(values.data(), memory.get(), memory.bytes(), stream);
  EXPECT_TRUE(copied.ok()) << copied.message();
  const Status synchronized = runtime.synchronize(stream);
  EXPECT_TRUE(synchronized.ok()) << synchronized.message();
  return values;
}

}  // namespace tern::engine::cuda
