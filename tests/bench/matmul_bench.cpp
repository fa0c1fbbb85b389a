// Matmul throughput: GEMV bandwidth (tokens = 1, weights rotated through more memory than any
// cache holds) and GEMM operations per second (tokens > 1).
//
//   matmul_bench [type=q8_0] [rows=5632] [cols=2048] [tokens=1] [threads=2] [isa=best] [resident]
//   matmul_bench bandwidth [threads=2]     # plain streaming-read bandwidth, for comparison
//
// `resident` keeps one copy of the weights, small enough to stay in cache (e.g. 256 x 2048): the
// GEMV's GB/s is then its compute ceiling, which must stay above a core's share of DRAM
// bandwidth for decode to be bandwidth-bound.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/q8_tiles.h"
#include "kernels/cpu/quant.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using namespace tern::kernels;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One streaming read of `buffer` by every thread of the pool; the wall time in seconds.
double read_pass(const AlignedBuffer& buffer, std::size_t bytes, ThreadPool& pool,
                 std::vector<long long>& sink) {
  const auto start = Clock::now();
  pool.parallel_for(
      static_cast<std::int64_t>(bytes / 64), [&](std::int64_t begin, std::int64_t end) {
        __m128i acc = _mm_setzero_si128();  // SSE2 loads saturate DRAM and need no flags
        const auto* p = reinterpret_cast<const __m128i*>(buffer.data());
        for (std::int64_t i = begin; i < end; ++i) {
          for (int j = 0; j < 4; ++j) acc = _mm_add_epi64(acc, _mm_load_si128(p + 4 * i + j));
        }
        sink[static_cast<std::size_t>(begin % 8)] += _mm_cvtsi128_si64(acc);
      });
  return seconds_since(start);
}

double read_bandwidth(int threads) {
  const std::size_t bytes = std::size_t{1} << 30;
  AlignedBuffer buffer(bytes);
  std::memset(buffer.data(), 1, bytes);
  ThreadPool pool(threads);
  std::vector<long long> sink(8);
  double best = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    best = std::max(best, static_cast<double>(bytes) / read_pass(buffer, bytes, pool, sink) / 1e9);
  }
  return best;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "bandwidth") {
    const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
    std::printf("read bandwidth, %d threads: %.1f GB/s\n", threads, read_bandwidth(threads));
    return 0;
  }
  const std::string type_name = argc > 1 ? argv[1] : "q8_0";
  const std::int64_t rows = argc > 2 ? std::atoll(argv[2]) : 5632;
  const std::int64_t cols = argc > 3 ? std::atoll(argv[3]) : 2048;
  const std::int64_t tokens = argc > 4 ? std::atoll(argv[4]) : 1;
  const int threads = argc > 5 ? std::atoi(argv[5]) : 2;
  const bool resident = argc > 7 && std::string(argv[7]) == "resident";
  Isa isa = active_isa();
  if (argc > 6 && std::string(argv[6]) != "best") {
    for (Isa candidate : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512_vnni}) {
      if (isa_name(candidate) == argv[6]) isa = candidate;
    }
  }
  const auto type = tensor_type_from_name(type_name);
  if (!type || !is_matmul_supported(*type) || !is_isa_supported(isa)) {
    std::fprintf(stderr, "unsupported type or isa\n");
    return 1;
  }

  const std::size_t row_bytes = *tensor_bytes(*type, static_cast<std::uint64_t>(cols));
  const std::size_t matrix_bytes = row_bytes * static_cast<std::size_t>(rows);
  // GEMV reads each matrix once per call, so rotate through copies that together dwarf the L3.
  const std::size_t copies = tokens == 1 && !resident
                                 ? std::max<std::size_t>(1, (std::size_t{512} << 20) / matrix_bytes)
                                 : 1;
  std::vector<AlignedBuffer> matrices;
  {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(static_cast<std::size_t>(cols));
    AlignedBuffer first(matrix_bytes);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = normal(rng);
      quantize_row(*type, row.data(), first.data() + static_cast<std::size_t>(r) * row_bytes, cols);
    }
    for (std::size_t c = 0; c < copies; ++c) {
      matrices.emplace_back(matrix_bytes);
      std::memcpy(matrices.back().data(), first.data(), matrix_bytes);
    }
  }
  std::vector<float> x(static_cast<std::size_t>(tokens * cols));
  {
    std::mt19937 rng(2);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) v = normal(rng);
  }
  std::vector<float> y(static_cast<std::size_t>(tokens * rows));
  ThreadPool pool(threads);
  MatmulWorkspace workspace(tokens, cols, threads);
  // As the CPU backend does: the kernels that read Q8_0 / Q4_0 in 16-row tiles get a tile copy.
  std::vector<WeightMatrix> weights;
  std::vector<AlignedBuffer> tile_copies;
  for (AlignedBuffer& matrix : matrices) {
    weights.push_back(WeightMatrix{*type, matrix.data(), rows, cols, row_bytes});
    if (uses_q8_tiles(*type, isa)) {
      tile_copies.emplace_back(q8_tiles_bytes(weights.back()));
      weights.back() = repack_q8_tiles(weights.back(), tile_copies.back().data(), pool);
    }
  }

  const auto call = [&](std::size_t copy) {
    matmul(isa, weights[copy], x.data(), tokens, cols, y.data(), rows, workspace, pool);
  };
  for (std::size_t c = 0; c < copies; ++c) call(c);  // warm up
  const double work_per_call = tokens == 1 ? static_cast<double>(matrix_bytes)
                                           : 2.0 * static_cast<double>(rows * cols * tokens);
  double best = 1e30;
  int calls = 0;
  timespec cpu_start{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
  const auto start = Clock::now();
  while (seconds_since(start) < 2.0 || calls < 3) {
    const auto one = Clock::now();
    call(static_cast<std::size_t>(calls) % copies);
    best = std::min(best, seconds_since(one));
    ++calls;
  }
  const double mean = seconds_since(start) / calls;
  timespec cpu_end{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_end);
  // CPU time per call per thread: what a quiet machine would show as wall time, when the
  // benchmark shares its cores with other work (threads spin while waiting, so it is an upper
  // bound of the busy time).
  const double cpu = (static_cast<double>(cpu_end.tv_sec - cpu_start.tv_sec) +
                      static_cast<double>(cpu_end.tv_nsec - cpu_start.tv_nsec) * 1e-9) /
                     calls / threads;
  std::printf("%s %s %lldx%lld tokens=%lld threads=%d: mean %.3f ms, best %.3f ms, cpu %.3f ms; ",
              type_name.c_str(), std::string(isa_name(isa)).c_str(), static_cast<long long>(rows),
              static_cast<long long>(cols), static_cast<long long>(tokens), threads, mean * 1e3,
              best * 1e3, cpu * 1e3);
  const char* unit = tokens == 1 ? "GB/s" : "GOPS";
  std::printf("%s mean %.1f, best %.1f, by cpu time %.1f\n", unit, work_per_call / mean / 1e9,
              work_per_call / best / 1e9, work_per_call / cpu / 1e9);
  if (tokens == 1 && !resident) {
    // The share of the read bandwidth, each sweep through the copies followed at once by a plain
    // read of as many bytes: both numbers see the same moment of a shared host, whose bandwidth
    // moves by tens of percent between seconds.
    const std::size_t probe_bytes = matrix_bytes * copies;
    AlignedBuffer probe(probe_bytes);
    std::memset(probe.data(), 1, probe_bytes);
    std::vector<long long> sink(8);
    std::vector<double> shares;
    const auto paired_start = Clock::now();
    while (seconds_since(paired_start) < 3.0 || shares.size() < 5) {
      const auto sweep = Clock::now();
      for (std::size_t c = 0; c < copies; ++c) call(c);
      const double kernel_seconds = seconds_since(sweep);
      shares.push_back(read_pass(probe, probe_bytes, pool, sink) / kernel_seconds);
    }
    const auto [lowest, highest] = std::minmax_element(shares.begin(), shares.end());
    std::printf("share of the read bandwidth, %zu paired sweeps: median %.1f%% (%.1f-%.1f%%)\n",
                shares.size(), 100.0 * median(shares), 100.0 * *lowest, 100.0 * *highest);
  }
  return 0;
}
