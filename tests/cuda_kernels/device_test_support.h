#pragma once

// Support for the CUDA kernel tests, which are compiled twice: against the SIMT emulator
// (tern_cuda_kernels_emulated_tests, in every `make test`) and against the real CUDA runtime
// (tern_cuda_kernels_tests, label gpu, built when nvcc is found and skipped without a device).
// Tests call the launchers of kernels/cuda/*.h with device memory from DeviceArray.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_api.h"

#if defined(TERN_SIMT_EMULATED)
#include "kernels/simt/launch.h"
#endif

namespace tern::cuda_test {

// Bytes of guard on each side of a DeviceArray's elements: a kernel that writes outside its
// array changes them, on a GPU too (where cudaMalloc's rounding would hide a short overrun), and
// the array's check fails the test. The emulator's own guard bands (kernels/simt/device_memory.h)
// lie beyond these. 256 keeps data() aligned as cudaMalloc's memory is.
inline constexpr std::size_t kGuardBytes = 256;

// An array's guard word: byte k of a guard is byte (k mod 4) of it, a signalling NaN as a float
// (so that a kernel reading past its input also tends to show), different for each array (so
// that a kernel copying past one array's end into past another's still changes a guard).
inline std::uint32_t next_guard_word() {
  static std::atomic<std::uint32_t> arrays{0};
  return 0x7f800001u | (((arrays.fetch_add(1) + 1) * 0x9e3779b1u) & 0x003ffffeu);
}

// A cudaMalloc'd array of T between two guards, copied from and back to the host. download()
// and the destructor check that the guards are intact (and restore them, so that one stray write
// fails once).
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) : count_(count) {
    void* raw = nullptr;
    if (cudaMalloc(&raw, 2 * kGuardBytes + count * sizeof(T)) == cudaSuccess)
      raw_ = static_cast<unsigned char*>(raw);
    if (raw_ == nullptr) return;
    if (count > 0) cudaMemset(data(), 0xff, count * sizeof(T));
    write_guards();
  }
  explicit DeviceArray(std::span<const T> values) : DeviceArray(values.size()) { upload(values); }
  explicit DeviceArray(const std::vector<T>& values) : DeviceArray(std::span<const T>(values)) {}
  ~DeviceArray() {
    if (raw_ == nullptr) return;
    expect_guards_intact();
    cudaFree(raw_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* data() const { return raw_ != nullptr ? reinterpret_cast<T*>(raw_ + kGuardBytes) : nullptr; }
  std::size_t size() const { return count_; }

  void upload(std::span<const T> values) {
    if (raw_ != nullptr && !values.empty()) {
      EXPECT_EQ(cudaMemcpy(data(), values.data(), values.size_bytes(), cudaMemcpyHostToDevice),
                cudaSuccess);
    }
  }
  std::vector<T> download() const {
    std::vector<T> values(count_);
    if (raw_ != nullptr && count_ > 0) {
      EXPECT_EQ(cudaMemcpy(values.data(), data(), count_ * sizeof(T), cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    expect_guards_intact();
    return values;
  }

  // Fails the test when a guard changed, naming the array and the changed bytes.
  void expect_guards_intact() const {
    if (raw_ == nullptr) return;
    check_guard(raw_, "before its start", true);
    check_guard(end(), "past its end", false);
  }

 private:
  unsigned char guard_byte(std::size_t k) const {
    return static_cast<unsigned char>(guard_word_ >> (8 * (k % 4)));
  }
  unsigned char* end() const { return raw_ + kGuardBytes + count_ * sizeof(T); }

  void write_guards() const {
    std::vector<unsigned char> guard(kGuardBytes);
    for (std::size_t k = 0; k < kGuardBytes; ++k) guard[k] = guard_byte(k);
    EXPECT_EQ(cudaMemcpy(raw_, guard.data(), kGuardBytes, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(end(), guard.data(), kGuardBytes, cudaMemcpyHostToDevice), cudaSuccess);
  }

  void check_guard(unsigned char* at, const char* where, bool before) const {
    std::vector<unsigned char> guard(kGuardBytes);
    if (cudaMemcpy(guard.data(), at, kGuardBytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
      ADD_FAILURE() << "could not read back the guard " << where << " of a DeviceArray";
      return;
    }
    std::size_t first = kGuardBytes, last = 0;
    for (std::size_t k = 0; k < kGuardBytes; ++k) {
      if (guard[k] == guard_byte(k)) continue;
      first = std::min(first, k);
      last = k;
    }
    if (first == kGuardBytes) return;
    // Offsets counted from the array's edge: 0 is the byte next to it.
    const std::size_t near = before ? kGuardBytes - 1 - last : first;
    const std::size_t far = before ? kGuardBytes - 1 - first : last;
    ADD_FAILURE() << "a kernel wrote outside a DeviceArray of " << count_ << " elements of "
                  << sizeof(T) << " bytes: bytes " << near << " to " << far << " " << where
                  << " changed (element " << near / sizeof(T) << " " << where << ")";
    write_guards();
  }

  unsigned char* raw_ = nullptr;
  std::size_t count_ = 0;
  std::uint32_t guard_word_ = next_guard_word();
};

inline bool has_device() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return ok;
}

// The schedules a kernel test runs under: the emulator's three thread orders, or one pass on a
// real device (whose order is the hardware's). On the emulator each pass's seed (the blocks'
// order, and the threads' in the random pass) comes from the process's schedule seed, which
// varies from run to run; a failure's trace names it, and TERN_SIMT_SCHEDULE_SEED replays it.
struct Pass {
  std::string name;
#if defined(TERN_SIMT_EMULATED)
  simt::Schedule schedule;
  std::uint64_t seed;
#endif
};

inline std::vector<Pass> passes() {
#if defined(TERN_SIMT_EMULATED)
  const std::uint64_t seed = simt::process_schedule_seed();
  const std::string replay = "; " + std::string(simt::kScheduleSeedVariable) + "=" +
                             std::to_string(seed) + " replays this run";
  return {
      {"forward schedule, seed " + std::to_string(seed) + replay, simt::Schedule::forward, seed},
      {"reverse schedule, seed " + std::to_string(seed + 1) + replay, simt::Schedule::reverse,
       seed + 1},
      {"random schedule, seed " + std::to_string(seed + 2) + replay, simt::Schedule::random,
       seed + 2}};
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
    const simt::ScopedSchedule scope(pass.schedule, pass.seed);
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
