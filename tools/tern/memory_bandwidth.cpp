#include "tools/tern/memory_bandwidth.h"

#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::tools {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 30;
constexpr std::size_t kWords = kBufferBytes / sizeof(std::uint64_t);

__attribute__((target("avx2"))) std::uint64_t sum_avx2(const std::uint64_t* data,
                                                       std::size_t count) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (std::size_t i = 0; i + 16 <= count; i += 16) {
    a = _mm256_add_epi64(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i)));
    b = _mm256_add_epi64(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 4)));
    c = _mm256_add_epi64(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 8)));
    d = _mm256_add_epi64(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 12)));
  }
  const __m256i total = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
  alignas(32) std::uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), total);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

std::uint64_t sum_scalar(const std::uint64_t* data, std::size_t count) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += data[i];
  return total;
}

}  // namespace

void ReadBandwidthProbe::FreeDeleter::operator()(std::uint64_t* memory) const {
  std::free(memory);
}

ReadBandwidthProbe::ReadBandwidthProbe(kernels::ThreadPool& pool)
    : pool_(pool), buffer_(static_cast<std::uint64_t*>(std::aligned_alloc(64, kBufferBytes))) {
  if (!buffer_) return;
  std::uint64_t* words = buffer_.get();
  pool_.parallel_for(static_cast<std::int64_t>(kWords), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) words[i] = static_cast<std::uint64_t>(i);
  });
}

ReadBandwidthProbe::~ReadBandwidthProbe() = default;

std::size_t ReadBandwidthProbe::bytes() const {
  return buffer_ ? kBufferBytes : 0;
}

double ReadBandwidthProbe::read_once() {
  if (!buffer_) return 0;
  const bool avx2 = kernels::cpu_features().avx2;
  const std::uint64_t* words = buffer_.get();
  std::atomic<std::uint64_t> sink{0};
  const auto start = std::chrono::steady_clock::now();
  pool_.run([&](int thread_index, int thread_count) {
    const std::size_t share = kWords / static_cast<std::size_t>(thread_count) / 16 * 16;
    const std::uint64_t* slice = words + share * static_cast<std::size_t>(thread_index);
    sink += avx2 ? sum_avx2(slice, share) : sum_scalar(slice, share);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sink_ += sink.load();  // keeps the sums observable
  return seconds;
}

}  // namespace tern::tools
