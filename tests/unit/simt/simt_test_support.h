#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kernels/simt/device_memory.h"
#include "kernels/simt/launch.h"

// Records the line of a statement before running it, so that a test can check that the
// emulator's error names that line: AT_LINE(g_line, __syncthreads());
#define AT_LINE(variable, statement) \
  variable = __LINE__;               \
  statement

namespace tern::simt {

inline constexpr Schedule kAllSchedules[] = {Schedule::forward, Schedule::reverse,
                                             Schedule::random};

inline LaunchConfig config_of(Dim3 grid, Dim3 block, Schedule schedule = Schedule::forward,
                              std::size_t dynamic_shared_bytes = 0) {
  LaunchConfig config;
  config.grid = grid;
  config.block = block;
  config.schedule = schedule;
  config.seed = process_schedule_seed();
  config.dynamic_shared_bytes = dynamic_shared_bytes;
  return config;
}

// One value in device memory, for kernels that write a scalar result.
template <class T>
class DeviceValue {
 public:
  explicit DeviceValue(T value) : storage_(1, value) {}
  T* ptr() { return storage_.data(); }
  T operator*() const { return storage_[0]; }

 private:
  DeviceVector<T> storage_;
};

// The status is the given fault, and its message names the kernel and the file and line.
inline void expect_fault(const LaunchStatus& status, LaunchErrorKind kind, const char* kernel,
                         const char* file, int line) {
  EXPECT_EQ(status.kind, kind) << status.message;
  EXPECT_NE(status.message.find("kernel '" + std::string(kernel) + "'"), std::string::npos)
      << status.message;
  EXPECT_NE(status.message.find(std::string(file) + ":" + std::to_string(line)), std::string::npos)
      << status.message;
}

}  // namespace tern::simt
