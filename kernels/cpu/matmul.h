#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor_type.h"

namespace tern::kernels {

// A weight matrix used in place (typically straight from the mmapped model file): row-major,
// rows = output features, cols = input features, each row `row_bytes` bytes of `type` blocks.
struct WeightMatrix {
  TensorType type;
  const void* data;
  std::int64_t rows;
  std::int64_t cols;
  std::size_t row_bytes;
  // Optional (q8_tiles.h): rows [0, tiled_rows) again in the 16-row tile layout, which the VNNI
  // kernels read instead of `data` for those rows. Other kernels ignore it.
  const std::byte* tiles = nullptr;
  std::int64_t tiled_rows = 0;
};

// Scratch for quantized activations and for the per-thread weight panels of the GEMM. Sized once
// for the largest call, then reused every step without allocating.
class MatmulWorkspace {
 public:
  // max_threads = 0 sizes the per-thread scratch for std::thread::hardware_concurrency().
  MatmulWorkspace(std::int64_t max_tokens, std::int64_t max_cols, int max_threads = 0);

  std::int64_t max_tokens() const { return max_tokens_; }
  std::int64_t max_cols() const { return max_cols_; }
  int max_threads() const { return max_threads_; }

  std::byte* activations() { return activations_.data(); }
  std::byte* thread_scratch(int thread_index) {
    return scratch_.data() + static_cast<std::size_t>(thread_index) * scratch_per_thread_;
  }
  std::size_t thread_scratch_bytes() const { return scratch_per_thread_; }

 private:
  std::int64_t max_tokens_;
  std::int64_t max_cols_;
  int max_threads_;
  std::size_t scratch_per_thread_;
  AlignedBuffer activations_;
  AlignedBuffer scratch_;
};

// y[t * y_stride + r] = dot(row r of w, x[t * x_stride ...]) for t < tokens, r < w.rows.
//
// Float weights (F32, F16, BF16) multiply f32 activations. Quantized weights multiply activations
// quantized per token row into the workspace: Q8_0 blocks for Q8_0/Q4_0 weights and Q8_K blocks
// for Q4_K/Q6_K, as llama.cpp's vec_dot types. tokens == 1 runs a GEMV split by rows; more tokens
// run a tiled GEMM. More tokens than the workspace holds are processed in chunks.
//
// Batch invariance: for a given Isa, every y element is computed with the same arithmetic in the
// same order whatever `tokens`, the token's position in the batch and the pool size, so results
// are bit-identical across batch compositions. Requires is_matmul_supported(w.type) and
// w.cols <= workspace.max_cols(); pool threads beyond workspace.max_threads() stay idle.
void matmul(const WeightMatrix& w, const float* x, std::int64_t tokens, std::int64_t x_stride,
            float* y, std::int64_t y_stride, MatmulWorkspace& workspace, ThreadPool& pool);

// The same with an explicit instruction-set variant, which must be supported.
void matmul(Isa isa, const WeightMatrix& w, const float* x, std::int64_t tokens,
            std::int64_t x_stride, float* y, std::int64_t y_stride, MatmulWorkspace& workspace,
            ThreadPool& pool);

// One product of a matmul_same_input() group: y[t * y_stride + r] = dot(row r of *w, x_t).
struct MatmulTarget {
  const WeightMatrix* w;
  float* y;
  std::int64_t y_stride;
};

// Several matrices applied to the same x (the Q, K and V projections; gate and up) in one
// parallel job: the rows of all of them are split between the threads as one range, so x is
// quantized once, the pool is woken once, and a small matrix does not pay a job's start-up alone.
// Each y element is computed exactly as matmul() computes it. A group whose matrices differ in
// type or column count runs as one matmul() per target.
void matmul_same_input(std::span<const MatmulTarget> targets, const float* x, std::int64_t tokens,
                       std::int64_t x_stride, MatmulWorkspace& workspace, ThreadPool& pool);

// The same with an explicit instruction-set variant, which must be supported.
void matmul_same_input(Isa isa, std::span<const MatmulTarget> targets, const float* x,
                       std::int64_t tokens, std::int64_t x_stride, MatmulWorkspace& workspace,
                       ThreadPool& pool);

// One product of a matmul_grouped() call, with its own input rows: y[t * y_stride + r] =
// dot(row r of *w, x[t * x_stride ...]) for t < tokens.
struct MatmulProblem {
  const WeightMatrix* w;
  const float* x;
  std::int64_t tokens;
  std::int64_t x_stride;
  float* y;
  std::int64_t y_stride;
};

// Several matrices, each applied to its own rows (the experts of a mixture of experts, each with
// the tokens routed to it), in one parallel job: their rows are split between the threads as one
// range and the pool is woken once. Problems that read the same rows (same x, tokens and stride,
// next to each other) quantize them once. Each y element is computed exactly as matmul() computes
// it. Problems that differ in type or column count, more than 64 of them, or more rows together
// than the workspace holds run as one matmul() per problem.
void matmul_grouped(std::span<const MatmulProblem> problems, MatmulWorkspace& workspace,
                    ThreadPool& pool);

}  // namespace tern::kernels
