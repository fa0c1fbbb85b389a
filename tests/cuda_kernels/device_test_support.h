#pragma once

// Support for the CUDA kernel tests, which are compiled twice: against the SIMT emulator
// (tern_cuda_kernels_emulated_tests, in every `make test`) and against the real CUDA runtime
// (tern_cuda_kernels_tests, label gpu, built when nvcc is found and skipped without a device).
// Tests call the launchers of kernels/cuda/*.h with device memory from DeviceArray.

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_api.h"

#if defined(TERN_SIMT_EMULATED)
#include "kernels/simt/launch.h"
#endif

namespace tern::cuda_test {

// A cudaMalloc'd array of T, copied from and back to the host.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) : count_(count) {
    void* raw = nullptr;
    if (cudaMalloc(&raw, count == 0 ? 1 : count * sizeof(T)) == cudaSuccess)
      data_ = static_cast<T*>(raw);
    if (data_ != nullptr) cudaMemset(data_, 0xff, count == 0 ? 1 : count * sizeof(T));
  }
  explicit DeviceArray(std::span<const T> values) : DeviceArray(values.size()) { upload(values); }
  explicit DeviceArray(const std::vector<T>& values) : DeviceArray(std::span<const T>(values)) {}
  ~DeviceArray() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }

  void upload(std::span<const T> values) {
    if (data_ != nullptr && !values.empty()) {
      EXPECT_EQ(cudaMemcpy(data_, values.data(), values.size_bytes(), cudaMemcpyHostToDevice),
                cudaSuccess);
    }
  }
  std::vector<T> download() const {
    std::vector<T> values(count_);
    if (data_ != nullptr && count_ > 0) {
      EXPECT_EQ(cudaMemcpy(values.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    return values;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

inline bool has_device() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return ok;
}

// The schedules a kernel test runs under: the emulator's three thread orders, or one pass on a
// real device (whose order is the hardware's).
struct Pass {
  std::string name;
#if defined(TERN_SIMT_EMULATED)
  simt::Schedule schedule;
#endif
};

inline std::vector<Pass> passes() {
#if defined(TERN_SIMT_EMULATED)
  return {{"forward schedule", simt::Schedule::forward},
          {"reverse schedule", simt::Schedule::reverse},
          {"random schedule", simt::Schedule::random}};
#else
  return {{"device"}};
#endif
}

// Runs body once per pass, under that pass's schedule on the emulator.
template <class Body>
void for_each_pass(Body&& body) {
  for (const Pass& pass : passes()) {
    SCOPED_TRACE(pass.name);
#if defined(TERN_SIMT_EMULATED)
    const simt::ScopedSchedule scope(pass.schedule, 20261124);
#endif
    body(pass);
  }
}

// The text of the last launch's failure, where the emulator recorded one.
inline std::string launch_message() {
#if defined(TERN_SIMT_EMULATED)
  return simt::last_launch_status().message;
#else
  return {};
#endif
}

}  // namespace tern::cuda_test

// First statement of every kernel test: skips on a build against CUDA without a device.
#define TERN_REQUIRE_DEVICE() \
  if (!::tern::cuda_test::has_device()) GTEST_SKIP() << "no CUDA device (driver) on this machine"

// A launcher returned cudaSuccess; otherwise the emulator's message says what failed.
#define TERN_EXPECT_LAUNCHED(call) \
  ASSERT_EQ((call), cudaSuccess) << ::tern::cuda_test::launch_message()
