#include "kernels/simt/device_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace tern::simt {
namespace {

// Allocations this large are mapped pages rather than heap memory: untouched pages cost no
// host memory, and zeroing them gives the pages back (a KV pool of gigabytes on an emulated
// device of gigabytes). Smaller ones stay on the heap, where ASan sees their bounds.
constexpr std::size_t kMappedFrom = 64u << 20;

struct Allocation {
  std::size_t bytes;
  std::size_t mapped_length;  // 0: heap memory
};

struct Registry {
  std::mutex mutex;
  std::map<std::uintptr_t, Allocation> allocations;  // by base address
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

void* device_allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + 255) / 256 * 256;
  void* pointer = nullptr;
  std::size_t mapped_length = 0;
  if (rounded >= kMappedFrom) {
    pointer = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pointer == MAP_FAILED) return nullptr;
    mapped_length = rounded;
  } else {
    pointer = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
    if (pointer == nullptr) return nullptr;
  }
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.allocations[reinterpret_cast<std::uintptr_t>(pointer)] = {bytes, mapped_length};
  return pointer;
}

bool device_free(void* pointer) {
  Registry& r = registry();
  std::size_t mapped_length = 0;
  {
    const std::lock_guard lock(r.mutex);
    const auto it = r.allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
    if (it == r.allocations.end()) return false;
    mapped_length = it->second.mapped_length;
    r.allocations.erase(it);
  }
  if (mapped_length > 0) {
    munmap(pointer, mapped_length);
  } else {
    std::free(pointer);
  }
  return true;
}

void device_fill(void* pointer, int byte, std::size_t bytes) {
  auto* begin = static_cast<unsigned char*>(pointer);
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  bool mapped = false;
  {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    auto it = r.allocations.upper_bound(address);
    if (it != r.allocations.begin()) {
      --it;
      mapped = it->second.mapped_length > 0 && address + bytes <= it->first + it->second.bytes;
    }
  }
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const std::uintptr_t first_page = (address + page - 1) / page * page;
  const std::uintptr_t end_page = (address + bytes) / page * page;
  if (byte != 0 || !mapped || end_page <= first_page) {
    std::memset(begin, byte, bytes);
    return;
  }
  // Private anonymous pages read as zeros again once dropped.
  std::memset(begin, 0, first_page - address);
  madvise(reinterpret_cast<void*>(first_page), end_page - first_page, MADV_DONTNEED);
  std::memset(reinterpret_cast<void*>(end_page), 0, address + bytes - end_page);
}

bool is_device_address(const void* pointer) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  auto it = r.allocations.upper_bound(address);
  if (it == r.allocations.begin()) return false;
  --it;
  return address <= it->first + it->second.bytes;
}

std::size_t device_allocation_count() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return r.allocations.size();
}

}  // namespace tern::simt
