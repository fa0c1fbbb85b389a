#include "tests/bench/cuda_kernel_bench_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "tests/bench/cuda_kernel_bench_device.h"
#include "tests/bench/cuda_kernel_bench_record.h"

namespace tern::cuda_bench {
namespace {

constexpr int kUntimedCopies = 2;

bool copy(void* to, const void* from, std::size_t bytes, cudaStream_t stream, std::string& error) {
  const cudaError_t status = cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream);
  if (status == cudaSuccess) return true;
  error = "cudaMemcpyAsync of " + std::to_string(bytes) + " bytes: " + describe_error(status);
  return false;
}

// Each copy's time in microseconds.
bool time_copies(void* to, const void* from, std::size_t bytes, int copies, cudaStream_t stream,
                 std::vector<double>& copy_us, std::string& error) {
  for (int i = 0; i < kUntimedCopies; ++i) {
    if (!copy(to, from, bytes, stream, error)) return false;
  }
  copy_us.assign(static_cast<std::size_t>(copies), 0.0);
#if defined(TERN_SIMT_EMULATED)
  for (double& us : copy_us) {
    const auto start = std::chrono::steady_clock::now();
    if (!copy(to, from, bytes, stream, error)) return false;
    us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  }
  return true;
#else
  std::vector<cudaEvent_t> events(static_cast<std::size_t>(copies) + 1, nullptr);
  bool ok = true;
  for (cudaEvent_t& event : events) ok = ok && cudaEventCreate(&event) == cudaSuccess;
  ok = ok && cudaEventRecord(events[0], stream) == cudaSuccess;
  for (int i = 0; ok && i < copies; ++i) {
    ok = copy(to, from, bytes, stream, error) &&
         cudaEventRecord(events[i + 1], stream) == cudaSuccess;
  }
  const cudaError_t synced = cudaStreamSynchronize(stream);
  if (ok && synced != cudaSuccess) {
    error = "the copies: " + describe_error(synced);
    ok = false;
  }
  for (int i = 0; ok && i < copies; ++i) {
    float ms = 0;
    cudaEventElapsedTime(&ms, events[i], events[i + 1]);
    copy_us[i] = 1000.0 * ms;
  }
  for (cudaEvent_t event : events) {
    if (event != nullptr) cudaEventDestroy(event);
  }
  if (!ok && error.empty()) error = "CUDA events: " + describe_error(cudaGetLastError());
  return ok;
#endif
}

}  // namespace

bool measure_copy_bandwidth(std::size_t bytes, int copies, cudaStream_t stream,
                            CopyBandwidth& result, std::string& error) {
  CaseInfo info;
  info.kernel = "bandwidth";
  info.name = "device_to_device_copy";
  info.format = "bytes";
  info.shape = std::to_string(bytes >> 20) + "MiB";
  info.params = {{"bytes_per_copy", static_cast<long long>(bytes)}, {"copies", copies}};
  info.bytes = 2.0 * static_cast<double>(bytes);  // each byte read once and written once

  DeviceBuffer from(bytes, "the copy's source");
  DeviceBuffer to(bytes, "the copy's destination");
  std::vector<double> copy_us;
  if (!from.ok() || !to.ok()) {
    error = !from.ok() ? from.error() : to.error();
  } else if (cudaMemset(from.data(), 0x5a, bytes) != cudaSuccess) {
    error = "cudaMemset of the copy's source: " + describe_error(cudaGetLastError());
  } else {
    time_copies(to.data(), from.data(), bytes, copies, stream, copy_us, error);
  }
  if (!error.empty()) {
    print_error(info, error);
    return false;
  }
  double sum = 0;
  for (const double us : copy_us) sum += us;
  const double mean_us = sum / copy_us.size();
  const double min_us = *std::min_element(copy_us.begin(), copy_us.end());
  result.best_gbs = info.bytes / (min_us * 1e-6) / 1e9;
  result.mean_gbs = info.bytes / (mean_us * 1e-6) / 1e9;

  JsonLine line;
  line.add("kernel", info.kernel).add("case", info.name).add("format", info.format);
  line.add("shape", info.shape);
  for (const auto& [key, value] : info.params) line.add(key, value);
  line.add("status", "ok").add("time_us_mean", mean_us).add("time_us_min", min_us);
  line.add("bytes", info.bytes).add("counts", "read+write");
  line.add("gbs", result.best_gbs).add("gbs_mean", result.mean_gbs);
  line.add("method", "cudaMemcpyAsync device to device");
#if defined(TERN_SIMT_EMULATED)
  line.add("timing", "emulator_wall_clock");
#else
  line.add("timing", "stream_events");
#endif
  line.print();
  return true;
}

}  // namespace tern::cuda_bench
