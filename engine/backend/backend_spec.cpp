#include "engine/backend/backend_spec.h"

#include <algorithm>
#include <numeric>
#include <string>

#include <fmt/format.h>

namespace tern::engine {

Expected<BackendKind> parse_backend_kind(std::string_view name) {
  if (name == "cpu") return BackendKind::cpu;
  if (name == "cuda") return BackendKind::cuda;
  if (name == "cuda-emulated") return BackendKind::cuda_emulated;
  return Error{"backend must be cpu, cuda or cuda-emulated, got '" + std::string(name) + "'",
               ErrorKind::invalid_field, "backend"};
}

std::string_view to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::cpu:
      return "cpu";
    case BackendKind::cuda:
      return "cuda";
    case BackendKind::cuda_emulated:
      return "cuda-emulated";
  }
  return "cpu";
}

namespace {

// "0, 1, 2" (fmt::join trips GCC's -Wstringop-overflow in fmt 9 here).
std::string device_list(const std::vector<int>& devices) {
  std::string list;
  for (const int device : devices) list += (list.empty() ? "" : ", ") + std::to_string(device);
  return list;
}

}  // namespace

Expected<std::vector<int>> tensor_parallel_devices(const BackendSpec& spec) {
  const int ranks = spec.tensor_parallel;
  auto refuse = [](std::string message) {
    return Error{std::move(message), ErrorKind::invalid_field, "tensor_parallel"};
  };
  if (ranks < 0) return refuse(fmt::format("tensor_parallel must be >= 1, got {}", ranks));
  if (ranks > 1 && !is_cuda(spec.kind)) {
    return refuse("tensor_parallel needs backend cuda or cuda-emulated");
  }
  if (ranks > 0 && !spec.devices.empty() &&
      static_cast<std::size_t>(ranks) != spec.devices.size()) {
    return refuse(fmt::format("tensor_parallel is {} but devices lists {} device{} ([{}])", ranks,
                              spec.devices.size(), spec.devices.size() == 1 ? "" : "s",
                              device_list(spec.devices)));
  }
  if (!spec.devices.empty()) return spec.devices;
  std::vector<int> devices(static_cast<std::size_t>(std::max(ranks, 1)));
  std::iota(devices.begin(), devices.end(), 0);
  return devices;
}

}  // namespace tern::engine
