#include "kernels/simt/device_memory.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>

namespace tern::simt {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::uintptr_t, std::size_t> allocations;  // base -> bytes
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

void* device_allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + 255) / 256 * 256;
  void* pointer = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
  if (pointer == nullptr) return nullptr;
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.allocations[reinterpret_cast<std::uintptr_t>(pointer)] = bytes;
  return pointer;
}

bool device_free(void* pointer) {
  Registry& r = registry();
  {
    const std::lock_guard lock(r.mutex);
    if (r.allocations.erase(reinterpret_cast<std::uintptr_t>(pointer)) == 0) return false;
  }
  std::free(pointer);
  return true;
}

bool is_device_address(const void* pointer) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  auto it = r.allocations.upper_bound(address);
  if (it == r.allocations.begin()) return false;
  --it;
  return address <= it->first + it->second;
}

std::size_t device_allocation_count() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return r.allocations.size();
}

}  // namespace tern::simt
