#include "kernels/simt/device_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "kernels/simt/asan.h"

#if defined(TERN_SIMT_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace tern::simt {
namespace {

// Allocations this large are mapped pages rather than heap memory: untouched pages cost no
// host memory, and zeroing them gives the pages back (a KV pool of gigabytes on an emulated
// device of gigabytes). Smaller ones stay on the heap.
constexpr std::size_t kMappedFrom = 64u << 20;
constexpr std::size_t kAlignment = 256;
static_assert(kGuardBandBytes % kAlignment == 0, "the front band keeps the start aligned");

struct Allocation {
  std::size_t bytes;
  unsigned char* base;  // where the front band begins
  std::size_t total;    // front band, the allocation, the back band
  bool mapped;
  std::string label;
  // Its bands' bytes: the byte at address a is byte (a mod 4) of this little-endian word.
  std::uint32_t pattern;

  unsigned char* start() const { return base + kGuardBandBytes; }
  unsigned char* end() const { return start() + bytes; }
  unsigned char* limit() const { return base + total; }
};

struct Registry {
  std::mutex mutex;
  std::map<std::uintptr_t, Allocation> allocations;  // by start address
};

Registry& registry() {
  static Registry instance;
  return instance;
}

std::atomic<std::size_t> g_violations_at_free{0};
std::atomic<std::uint32_t> g_allocations_made{0};

// A signalling NaN as a float (exponent all ones, mantissa nonzero with its top bit clear), and
// so is its upper half as a __half; the lower 22 bits differ from one allocation to the next.
std::uint32_t next_pattern() {
  const std::uint32_t serial = g_allocations_made.fetch_add(1) + 1;
  return 0x7f800001u | ((serial * 0x9e3779b1u) & 0x003ffffeu);
}

unsigned char pattern_byte(std::uint32_t pattern, const unsigned char* at) {
  return static_cast<unsigned char>(pattern >> (8 * (reinterpret_cast<std::uintptr_t>(at) & 3)));
}

void poison(unsigned char* begin, unsigned char* end) {
#if defined(TERN_SIMT_ASAN)
  ASAN_POISON_MEMORY_REGION(begin, static_cast<std::size_t>(end - begin));
#else
  static_cast<void>(begin);
  static_cast<void>(end);
#endif
}

void unpoison(unsigned char* begin, unsigned char* end) {
#if defined(TERN_SIMT_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(begin, static_cast<std::size_t>(end - begin));
#else
  static_cast<void>(begin);
  static_cast<void>(end);
#endif
}

void fill_band(std::uint32_t pattern, unsigned char* begin, unsigned char* end) {
  for (unsigned char* at = begin; at < end; ++at) *at = pattern_byte(pattern, at);
}

// The common case, an intact band, a word at a time.
bool band_intact(std::uint32_t pattern, const unsigned char* begin, const unsigned char* end) {
  const std::uint64_t word_pattern = (std::uint64_t{pattern} << 32) | pattern;
  const unsigned char* at = begin;
  for (; at < end && reinterpret_cast<std::uintptr_t>(at) % 8 != 0; ++at)
    if (*at != pattern_byte(pattern, at)) return false;
  for (; at + 8 <= end; at += 8) {
    std::uint64_t word;
    std::memcpy(&word, at, sizeof word);
    if (word != word_pattern) return false;
  }
  for (; at < end; ++at)
    if (*at != pattern_byte(pattern, at)) return false;
  return true;
}

// Checks one band and restores it; records the changed bytes into `violation`.
bool check_band(const Allocation& allocation, unsigned char* begin, unsigned char* end,
                std::optional<GuardViolation>& violation) {
  const std::uint32_t pattern = allocation.pattern;
  unpoison(begin, end);
  const bool intact = band_intact(pattern, begin, end);
  if (!intact) {
    const unsigned char* first = begin;
    while (*first == pattern_byte(pattern, first)) ++first;
    const unsigned char* last = end - 1;
    while (*last == pattern_byte(pattern, last)) --last;
    if (!violation) {
      violation =
          GuardViolation{reinterpret_cast<std::uintptr_t>(allocation.start()), allocation.bytes,
                         allocation.label, first - allocation.start(), last - allocation.start()};
    }
    fill_band(pattern, begin, end);
  }
  poison(begin, end);
  return intact;
}

std::optional<GuardViolation> check_allocation(const Allocation& allocation) {
  std::optional<GuardViolation> violation;
  check_band(allocation, allocation.base, allocation.start(), violation);
  check_band(allocation, allocation.end(), allocation.limit(), violation);
  return violation;
}

}  // namespace

void* device_allocate(std::size_t bytes, std::string_view label) {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  const std::size_t total = rounded + 2 * kGuardBandBytes;
  void* pointer = nullptr;
  const bool mapped = total >= kMappedFrom;
  if (mapped) {
    pointer = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pointer == MAP_FAILED) return nullptr;
  } else {
    pointer = std::aligned_alloc(kAlignment, total);
    if (pointer == nullptr) return nullptr;
  }
  Allocation allocation{
      bytes,         static_cast<unsigned char*>(pointer), total, mapped, std::string(label),
      next_pattern()};
  fill_band(allocation.pattern, allocation.base, allocation.start());
  fill_band(allocation.pattern, allocation.end(), allocation.limit());
  poison(allocation.base, allocation.start());
  poison(allocation.end(), allocation.limit());
  unsigned char* start = allocation.start();
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.allocations.emplace(reinterpret_cast<std::uintptr_t>(start), std::move(allocation));
  return start;
}

bool device_free(void* pointer) {
  Registry& r = registry();
  std::optional<Allocation> freed;
  std::optional<GuardViolation> violation;
  {
    const std::lock_guard lock(r.mutex);
    const auto it = r.allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
    if (it == r.allocations.end()) return false;
    violation = check_allocation(it->second);
    freed = std::move(it->second);
    r.allocations.erase(it);
  }
  if (violation) {
    // Whatever wrote it ran outside a launch's check (host code), or its launch's report was
    // not read; there is no caller to hand an error to here.
    ++g_violations_at_free;
    std::fprintf(stderr, "simt: at cudaFree, %s\n", describe(*violation).c_str());
  }
  unpoison(freed->base, freed->limit());
  if (freed->mapped) {
    munmap(freed->base, freed->total);
  } else {
    std::free(freed->base);
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
      mapped = it->second.mapped && address + bytes <= it->first + it->second.bytes;
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
  return is_device_range(pointer, 0);
}

bool is_device_range(const void* pointer, std::size_t bytes) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  auto it = r.allocations.upper_bound(address);
  if (it == r.allocations.begin()) return false;
  --it;
  const std::size_t offset = address - it->first;
  return offset <= it->second.bytes && bytes <= it->second.bytes - offset;
}

std::size_t device_allocation_count() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return r.allocations.size();
}

std::string describe(const GuardViolation& violation) {
  char address[32];
  std::snprintf(address, sizeof address, "0x%" PRIxPTR, violation.allocation);
  const std::string allocation = "device allocation " +
                                 (violation.label.empty() ? "" : "'" + violation.label + "' ") +
                                 "of " + std::to_string(violation.bytes) + " bytes at " + address;
  const auto size = static_cast<std::ptrdiff_t>(violation.bytes);
  if (violation.first_changed >= size) {
    return "out-of-bounds write past the end of " + allocation + ": bytes " +
           std::to_string(violation.first_changed - size) + " to " +
           std::to_string(violation.last_changed - size) + " past its end changed";
  }
  return "out-of-bounds write before the start of " + allocation + ": bytes " +
         std::to_string(-violation.last_changed) + " to " +
         std::to_string(-violation.first_changed) + " before its start changed";
}

std::optional<GuardViolation> check_guard_bands() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  std::optional<GuardViolation> first;
  for (const auto& [start, allocation] : r.allocations) {
    std::optional<GuardViolation> violation = check_allocation(allocation);
    if (violation && !first) first = std::move(violation);
  }
  return first;
}

std::size_t guard_violations_at_free() {
  return g_violations_at_free.load();
}

}  // namespace tern::simt
