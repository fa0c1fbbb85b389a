#include "engine/backend/device.h"

#include <unistd.h>

#include <fstream>
#include <thread>

#include <fmt/format.h>

#if TERN_WITH_CUDA
#include "engine/backend/cuda/cuda_devices.h"
#endif

namespace tern::engine {
namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "CPU";
}

std::uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

}  // namespace

const char* to_string(DeviceKind kind) {
  return kind == DeviceKind::cpu ? "cpu" : "cuda";
}

DeviceReport discover_devices() {
  DeviceReport report;
  DeviceInfo cpu;
  cpu.kind = DeviceKind::cpu;
  cpu.name = cpu_model_name();
  cpu.memory_bytes = physical_memory_bytes();
  cpu.detail = fmt::format("{} threads", std::thread::hardware_concurrency());
  report.devices.push_back(std::move(cpu));
#if TERN_WITH_CUDA
  report.cuda_compiled = true;
  cuda::CudaDiscovery cuda = cuda::discover_cuda_devices();
  report.cuda_status = std::move(cuda.status);
  for (auto& device : cuda.devices) report.devices.push_back(std::move(device));
#else
  report.cuda_status = "not compiled in (built with TERN_CUDA=OFF or without nvcc)";
#endif
  return report;
}

}  // namespace tern::engine
