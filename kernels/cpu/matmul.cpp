#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <thread>
#include <utility>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quant.h"

namespace tern::kernels {
namespace {

using detail::ActivationKind;
using detail::KernelArgs;
using detail::KernelTable;

// Row ranges handed to threads are multiples of this, the tallest GEMM tile, so no thread ends
// up with a ragged tile in the middle of the matrix.
constexpr std::int64_t kRowGranule = 32;
constexpr std::size_t kMaxGroupTargets = 4;
constexpr std::size_t kMaxGroupProblems = 64;
// Below this many multiply-adds a job runs on the calling thread: waking the pool costs more
// than the work (a router's 32 x 1024 at one token). Which thread computes a row does not change
// its arithmetic.
constexpr std::int64_t kInlineMultiplyAdds = 64 * 1024;
constexpr int kMaxThreads = 64;  // threads one matmul spreads over (more stay idle)
// A thread takes from its own share an eighth of what is left, at least two granules: a few
// large claims while much remains (each claim is an atomic exchange and a restart of the
// kernel's prefetch stream), small ones near the end, where a slow thread's last claim is what
// the others wait for.
constexpr std::int64_t kOwnerGranules = 2;
constexpr std::int64_t kClaimDivisor = 8;

// A thread's share of granules, [front, back): its owner claims from the front; a thread that
// ran out of work takes the back half and makes it its own share. Both ends live in one atomic
// word so a granule is never taken twice.
class alignas(64) GranuleRange {
 public:
  void reset(std::int64_t begin, std::int64_t end) {
    bounds_.store(pack(begin, end), std::memory_order_relaxed);
  }
  // The first granule of the owner's next claim, or -1 when none is left; the claim ends at
  // claimed_end(), before any granule another thread took.
  std::int64_t take_front() {
    std::uint64_t bounds = bounds_.load(std::memory_order_relaxed);
    for (;;) {
      const std::int64_t front = front_of(bounds), back = back_of(bounds);
      if (front >= back) return -1;
      const std::int64_t count = std::max(kOwnerGranules, (back - front) / kClaimDivisor);
      const std::int64_t next = std::min(front + count, back);
      if (bounds_.compare_exchange_weak(bounds, pack(next, back), std::memory_order_relaxed)) {
        claimed_end_ = next;
        return front;
      }
    }
  }
  std::int64_t claimed_end() const { return claimed_end_; }
  // The back half of what is left (the larger half when odd), as [first, second); empty when
  // nothing is.
  std::pair<std::int64_t, std::int64_t> take_back_half() {
    std::uint64_t bounds = bounds_.load(std::memory_order_relaxed);
    for (;;) {
      const std::int64_t front = front_of(bounds), back = back_of(bounds);
      if (front >= back) return {0, 0};
      const std::int64_t middle = front + (back - front) / 2;
      if (bounds_.compare_exchange_weak(bounds, pack(front, middle), std::memory_order_relaxed)) {
        return {middle, back};
      }
    }
  }

 private:
  static std::uint64_t pack(std::int64_t front, std::int64_t back) {
    return static_cast<std::uint64_t>(front) << 32 | static_cast<std::uint64_t>(back);
  }
  static std::int64_t front_of(std::uint64_t bounds) {
    return static_cast<std::int64_t>(bounds >> 32);
  }
  static std::int64_t back_of(std::uint64_t bounds) {
    return static_cast<std::int64_t>(bounds & 0xFFFFFFFFu);
  }

  std::atomic<std::uint64_t> bounds_{0};
  std::int64_t claimed_end_ = 0;  // owner only
};

// Runs compute(thread_args, first_granule, end_granule) over granules [0, granules), on the pool
// or, when `small`, on the caller alone. Each thread starts on its own contiguous share and, once
// done, takes the back half of another's remaining share as its own: on a shared host one core
// often runs slower for a while, and a static split made the other wait for it at every matmul.
// (Taking single granules instead cost an atomic exchange on the owner's cache line per granule:
// perf put the jobs' own bookkeeping at 255 us of CPU a token of MoE Q4_0 decode then, 206 now.)
template <class Compute>
void run_granules(ThreadPool& pool, MatmulWorkspace& workspace, std::int64_t granules, bool small,
                  const KernelArgs& args, Compute&& compute) {
  const int thread_count =
      small ? 1 : std::min({pool.size(), workspace.max_threads(), kMaxThreads});
  std::array<GranuleRange, kMaxThreads> shares;
  for (int t = 0; t < thread_count; ++t) {
    shares[static_cast<std::size_t>(t)].reset(granules * t / thread_count,
                                              granules * (t + 1) / thread_count);
  }
  const auto per_thread = [&](int thread_index) {
    // A pool larger than the workspace leaves its extra threads idle rather than failing.
    if (thread_index >= thread_count) return;
    KernelArgs thread_args = args;
    thread_args.scratch = workspace.thread_scratch(thread_index);
    thread_args.scratch_bytes = workspace.thread_scratch_bytes();
    GranuleRange& own = shares[static_cast<std::size_t>(thread_index)];
    for (bool working = true; working;) {
      for (std::int64_t g; (g = own.take_front()) >= 0;) compute(thread_args, g, own.claimed_end());
      working = false;
      for (int other = 1; other < thread_count && !working; ++other) {
        GranuleRange& victim =
            shares[static_cast<std::size_t>((thread_index + other) % thread_count)];
        const auto [first, end] = victim.take_back_half();
        if (first < end) {
          own.reset(first, end);
          working = true;
        }
      }
    }
  };
  if (small) {
    per_thread(0);
  } else {
    pool.run([&](int thread_index, int) { per_thread(thread_index); });
  }
}

const KernelTable& kernel_table(Isa isa) {
  switch (isa) {
    case Isa::avx2:
      return detail::avx2_kernels();
    case Isa::avx512:
      return detail::avx512_kernels();
    case Isa::avx512_vnni:
      return detail::avx512_vnni_kernels();
    case Isa::scalar:
      break;
  }
  return detail::scalar_kernels();
}

detail::RowsKernel rows_kernel(const KernelTable& table, TensorType type) {
  switch (type) {
    case TensorType::f32:
      return table.f32;
    case TensorType::f16:
      return table.f16;
    case TensorType::bf16:
      return table.bf16;
    case TensorType::q8_0:
      return table.q8_0;
    case TensorType::q4_0:
      return table.q4_0;
    case TensorType::q4_k:
      return table.q4_k;
    case TensorType::q6_k:
      return table.q6_k;
    default:
      return nullptr;
  }
}

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::int64_t quantized_row_bytes(ActivationKind kind, std::int64_t cols) {
  if (kind == ActivationKind::q8)
    return cols / 32 * static_cast<std::int64_t>(sizeof(detail::Q8Activation));
  return cols / 256 * static_cast<std::int64_t>(sizeof(BlockQ8K));
}

std::size_t activation_bytes(std::int64_t max_tokens, std::int64_t max_cols) {
  const std::int64_t cols = round_up(max_cols, 256);
  const std::int64_t row = std::max(quantized_row_bytes(ActivationKind::q8, cols),
                                    quantized_row_bytes(ActivationKind::q8_k, cols));
  return static_cast<std::size_t>(max_tokens * row);
}

std::size_t scratch_bytes(std::int64_t max_cols) {
  std::size_t bytes = 0;
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512_vnni}) {
    if (is_isa_supported(isa)) bytes = std::max(bytes, kernel_table(isa).scratch_bytes(max_cols));
  }
  return round_up(static_cast<std::int64_t>(bytes), AlignedBuffer::kAlignment);
}

void quantize_activations(const KernelTable& table, TensorType type, const float* x,
                          std::int64_t x_stride, std::int64_t cols, std::byte* dst,
                          std::int64_t dst_stride, std::int64_t begin, std::int64_t end) {
  for (std::int64_t t = begin; t < end; ++t) {
    std::byte* row = dst + t * dst_stride;
    if (detail::activation_kind(type) == ActivationKind::q8) {
      const int offset = type == TensorType::q8_0 ? detail::kQ8_0Offset : detail::kQ4_0Offset;
      table.quantize_q8(x + t * x_stride, cols, reinterpret_cast<detail::Q8Activation*>(row),
                        offset);
    } else {
      table.quantize_q8_k(x + t * x_stride, cols, reinterpret_cast<BlockQ8K*>(row));
    }
  }
}

}  // namespace

MatmulWorkspace::MatmulWorkspace(std::int64_t max_tokens, std::int64_t max_cols, int max_threads)
    : max_tokens_(std::max<std::int64_t>(max_tokens, 1)),
      max_cols_(max_cols),
      max_threads_(max_threads > 0
                       ? max_threads
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))),
      scratch_per_thread_(scratch_bytes(max_cols)),
      activations_(activation_bytes(max_tokens_, max_cols)),
      scratch_(scratch_per_thread_ * static_cast<std::size_t>(max_threads_)) {}

void matmul(const WeightMatrix& w, const float* x, std::int64_t tokens, std::int64_t x_stride,
            float* y, std::int64_t y_stride, MatmulWorkspace& workspace, ThreadPool& pool) {
  matmul(active_isa(), w, x, tokens, x_stride, y, y_stride, workspace, pool);
}

void matmul(Isa isa, const WeightMatrix& w, const float* x, std::int64_t tokens,
            std::int64_t x_stride, float* y, std::int64_t y_stride, MatmulWorkspace& workspace,
            ThreadPool& pool) {
  const MatmulTarget target{&w, y, y_stride};
  matmul_same_input(isa, {&target, 1}, x, tokens, x_stride, workspace, pool);
}

void matmul_same_input(std::span<const MatmulTarget> targets, const float* x, std::int64_t tokens,
                       std::int64_t x_stride, MatmulWorkspace& workspace, ThreadPool& pool) {
  matmul_same_input(active_isa(), targets, x, tokens, x_stride, workspace, pool);
}

void matmul_same_input(Isa isa, std::span<const MatmulTarget> targets, const float* x,
                       std::int64_t tokens, std::int64_t x_stride, MatmulWorkspace& workspace,
                       ThreadPool& pool) {
  if (targets.empty()) return;
  const WeightMatrix& first = *targets.front().w;
  const bool compatible = targets.size() <= kMaxGroupTargets &&
                          std::ranges::all_of(targets, [&](const MatmulTarget& target) {
                            return target.w->type == first.type && target.w->cols == first.cols;
                          });
  if (!compatible) {
    for (const MatmulTarget& target : targets) {
      matmul_same_input(isa, {&target, 1}, x, tokens, x_stride, workspace, pool);
    }
    return;
  }
  assert(is_matmul_supported(first.type) && is_isa_supported(isa));
  assert(first.cols <= workspace.max_cols());
  assert(first.cols % tensor_type_traits(first.type).block_elements == 0);
  const KernelTable& table = kernel_table(isa);
  const detail::RowsKernel kernel = rows_kernel(table, first.type);
  const ActivationKind kind = detail::activation_kind(first.type);
  const std::int64_t act_stride = quantized_row_bytes(kind, first.cols);
  // Target i owns granules [granule_begin[i], granule_begin[i + 1]) of the combined range.
  std::array<std::int64_t, kMaxGroupTargets + 1> granule_begin{};
  for (std::size_t i = 0; i < targets.size(); ++i) {
    granule_begin[i + 1] = granule_begin[i] + (targets[i].w->rows + kRowGranule - 1) / kRowGranule;
  }
  const std::int64_t granules = granule_begin[targets.size()];

  for (std::int64_t first_token = 0; first_token < tokens; first_token += workspace.max_tokens()) {
    const std::int64_t count = std::min(workspace.max_tokens(), tokens - first_token);
    const float* chunk_x = x + first_token * x_stride;
    KernelArgs args{&first, nullptr, 0, count, nullptr, 0, nullptr, 0};
    if (kind == ActivationKind::f32) {
      args.act = reinterpret_cast<const std::byte*>(chunk_x);
      args.act_stride = x_stride * static_cast<std::int64_t>(sizeof(float));
    } else {
      std::byte* act = workspace.activations();
      if (count == 1) {
        quantize_activations(table, first.type, chunk_x, x_stride, first.cols, act, act_stride, 0,
                             1);
      } else {
        pool.parallel_for(count, [&](std::int64_t begin, std::int64_t end) {
          quantize_activations(table, first.type, chunk_x, x_stride, first.cols, act, act_stride,
                               begin, end);
        });
      }
      args.act = act;
      args.act_stride = act_stride;
    }
    std::int64_t multiply_adds = 0;
    for (const MatmulTarget& target : targets) multiply_adds += target.w->rows * first.cols * count;
    const auto compute_granules = [&](KernelArgs& thread_args, std::int64_t begin,
                                      std::int64_t end) {
      for (std::size_t i = 0; i < targets.size(); ++i) {
        const WeightMatrix& w = *targets[i].w;
        const std::int64_t row_begin =
            std::min(w.rows, (std::max(begin, granule_begin[i]) - granule_begin[i]) * kRowGranule);
        const std::int64_t row_end = std::min(
            w.rows, (std::min(end, granule_begin[i + 1]) - granule_begin[i]) * kRowGranule);
        if (row_begin >= row_end) continue;
        thread_args.w = &w;
        thread_args.y = targets[i].y + first_token * targets[i].y_stride;
        thread_args.y_stride = targets[i].y_stride;
        kernel(thread_args, row_begin, row_end);
      }
    };
    run_granules(pool, workspace, granules, multiply_adds <= kInlineMultiplyAdds, args,
                 compute_granules);
  }
}

void matmul_grouped(std::span<const MatmulProblem> problems, MatmulWorkspace& workspace,
                    ThreadPool& pool) {
  if (problems.empty()) return;
  const WeightMatrix& first = *problems.front().w;
  // Problem i reads activation rows from act_row[i]; a problem reading its predecessor's rows
  // shares them.
  std::array<std::int64_t, kMaxGroupProblems + 1> act_row{};
  std::int64_t rows = 0;
  bool compatible = problems.size() <= kMaxGroupProblems;
  for (std::size_t i = 0; compatible && i < problems.size(); ++i) {
    const MatmulProblem& p = problems[i];
    compatible = p.w->type == first.type && p.w->cols == first.cols && p.tokens > 0;
    const bool same_rows = i > 0 && p.x == problems[i - 1].x &&
                           p.tokens == problems[i - 1].tokens &&
                           p.x_stride == problems[i - 1].x_stride;
    act_row[i] = same_rows ? act_row[i - 1] : rows;
    if (!same_rows) rows += p.tokens;
  }
  if (!compatible || rows > workspace.max_tokens()) {
    for (const MatmulProblem& p : problems) {
      if (p.tokens > 0) matmul(*p.w, p.x, p.tokens, p.x_stride, p.y, p.y_stride, workspace, pool);
    }
    return;
  }
  const Isa isa = active_isa();
  assert(is_matmul_supported(first.type) && first.cols <= workspace.max_cols());
  const KernelTable& table = kernel_table(isa);
  const detail::RowsKernel kernel = rows_kernel(table, first.type);
  const ActivationKind kind = detail::activation_kind(first.type);
  const std::int64_t act_stride = quantized_row_bytes(kind, first.cols);
  std::byte* act = workspace.activations();
  if (kind != ActivationKind::f32) {
    const auto quantize = [&](std::int64_t begin, std::int64_t end) {
      for (std::size_t i = 0; i < problems.size(); ++i) {
        if (i > 0 && act_row[i] == act_row[i - 1]) continue;
        const MatmulProblem& p = problems[i];
        const std::int64_t from = std::max(begin, act_row[i]);
        const std::int64_t to = std::min(end, act_row[i] + p.tokens);
        if (from >= to) continue;
        // Row t of the problem goes to activation row act_row[i] + t.
        quantize_activations(table, first.type, p.x, p.x_stride, first.cols,
                             act + act_row[i] * act_stride, act_stride, from - act_row[i],
                             to - act_row[i]);
      }
    };
    if (rows <= 8) {
      quantize(0, rows);
    } else {
      pool.parallel_for(rows, quantize);
    }
  }
  std::array<std::int64_t, kMaxGroupProblems + 1> granule_begin{};
  for (std::size_t i = 0; i < problems.size(); ++i) {
    granule_begin[i + 1] = granule_begin[i] + (problems[i].w->rows + kRowGranule - 1) / kRowGranule;
  }
  const std::int64_t granules = granule_begin[problems.size()];
  std::int64_t multiply_adds = 0;
  for (const MatmulProblem& p : problems) multiply_adds += p.w->rows * first.cols * p.tokens;
  const auto compute_granules = [&](KernelArgs& thread_args, std::int64_t begin, std::int64_t end) {
    for (std::size_t i = 0; i < problems.size(); ++i) {
      const MatmulProblem& p = problems[i];
      const WeightMatrix& w = *p.w;
      const std::int64_t row_begin =
          std::min(w.rows, (std::max(begin, granule_begin[i]) - granule_begin[i]) * kRowGranule);
      const std::int64_t row_end =
          std::min(w.rows, (std::min(end, granule_begin[i + 1]) - granule_begin[i]) * kRowGranule);
      if (row_begin >= row_end) continue;
      thread_args.w = &w;
      thread_args.tokens = p.tokens;
      if (kind == ActivationKind::f32) {
        thread_args.act = reinterpret_cast<const std::byte*>(p.x);
        thread_args.act_stride = p.x_stride * static_cast<std::int64_t>(sizeof(float));
      } else {
        thread_args.act = act + act_row[i] * act_stride;
        thread_args.act_stride = act_stride;
      }
      thread_args.y = p.y;
      thread_args.y_stride = p.y_stride;
      kernel(thread_args, row_begin, row_end);
    }
  };
  const KernelArgs args{&first, nullptr, 0, 0, nullptr, 0, nullptr, 0};
  run_granules(pool, workspace, granules, multiply_adds <= kInlineMultiplyAdds, args,
               compute_granules);
}

}  // namespace tern::kernels
