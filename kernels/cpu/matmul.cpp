#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <thread>

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
    pool.run([&](int thread_index, int pool_threads) {
      // A pool larger than the workspace leaves its extra threads idle rather than failing.
      const int thread_count = std::min(pool_threads, workspace.max_threads());
      if (thread_index >= thread_count) return;
      const std::int64_t begin = granules * thread_index / thread_count;
      const std::int64_t end = granules * (thread_index + 1) / thread_count;
      KernelArgs thread_args = args;
      thread_args.scratch = workspace.thread_scratch(thread_index);
      thread_args.scratch_bytes = workspace.thread_scratch_bytes();
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
    });
  }
}

}  // namespace tern::kernels
