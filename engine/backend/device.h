#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tern::engine {

enum class DeviceKind { cpu, cuda };

struct DeviceInfo {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
  std::string detail;  // cores for a CPU; compute capability for a GPU
};

struct DeviceReport {
  bool cuda_compiled = false;
  std::string cuda_status;          // why no CUDA device is usable, or the runtime version
  std::vector<DeviceInfo> devices;  // the CPU first, then every usable CUDA device
};

// Enumerates compute devices. Never fails: a missing GPU or driver is reported in cuda_status,
// and the CPU is always present.
DeviceReport discover_devices();

const char* to_string(DeviceKind kind);

}  // namespace tern::engine
