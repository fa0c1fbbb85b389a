#include "engine/model/prefault.h"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace tern::engine {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{64} << 20;
constexpr std::size_t kProgressStepBytes = std::size_t{1} << 20;
constexpr auto kLogInterval = std::chrono::seconds(2);

std::size_t page_size() {
  const long size = ::sysconf(_SC_PAGESIZE);
  return size > 0 ? static_cast<std::size_t>(size) : 4096;
}

double mib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

}  // namespace

void prefault(std::span<const std::span<const std::byte>> regions, std::string_view label) {
  std::uint64_t total = 0;
  for (const auto& region : regions) total += region.size();
  const std::size_t page = page_size();
  std::uint64_t done = 0;
  auto last_log = std::chrono::steady_clock::now();
  // The sum keeps the reads from being optimized away.
  volatile std::uint8_t sink = 0;
  std::uint8_t sum = 0;
  for (const auto& region : regions) {
    for (std::size_t start = 0; start < region.size(); start += kChunkBytes) {
      const std::size_t length = std::min(kChunkBytes, region.size() - start);
      const std::byte* chunk = region.data() + start;
      // Read-ahead hint for the whole chunk; madvise wants a page-aligned start.
      const auto address = reinterpret_cast<std::uintptr_t>(chunk);
      const std::uintptr_t aligned = address & ~(static_cast<std::uintptr_t>(page) - 1);
      ::madvise(reinterpret_cast<void*>(aligned), length + (address - aligned), MADV_WILLNEED);
      // The clock is read once per MiB, so progress lines keep coming even from a slow disk.
      for (std::size_t step = 0; step < length; step += kProgressStepBytes) {
        const std::size_t step_end = std::min(length, step + kProgressStepBytes);
        // One byte of every page the step covers: its first byte, then each page start. Striding
        // by a page from an unaligned start would miss the page the region ends in.
        for (std::size_t offset = step; offset < step_end;
             offset += page - (address + offset) % page) {
          sum = static_cast<std::uint8_t>(sum + std::to_integer<std::uint8_t>(chunk[offset]));
        }
        done += step_end - step;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_log >= kLogInterval) {
          last_log = now;
          spdlog::info("loading {}: {:.0f} / {:.0f} MiB ({:.0f}%)", label, mib(done), mib(total),
                       100.0 * static_cast<double>(done) / static_cast<double>(total));
        }
      }
    }
  }
  sink = sum;
  (void)sink;
}

std::optional<std::uint64_t> resident_memory_bytes() {
  std::FILE* file = std::fopen("/proc/self/statm", "r");
  if (file == nullptr) return std::nullopt;
  unsigned long long size_pages = 0;
  unsigned long long resident_pages = 0;
  const int fields = std::fscanf(file, "%llu %llu", &size_pages, &resident_pages);
  std::fclose(file);
  if (fields != 2) return std::nullopt;
  return static_cast<std::uint64_t>(resident_pages) * page_size();
}

}  // namespace tern::engine
