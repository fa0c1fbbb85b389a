#pragma once

// The CUDA path against the CPU backend on the same plans, for the CUDA backend's tests: a test
// that compares the CUDA path only with itself (graphs with eager steps, N ranks with one) would
// pass where both are wrong the same way.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::engine {

// How far a CUDA logit may lie from the CPU backend's: the kernels sum in other orders (tree
// sums in the norms, 32 interleaved fmaf slots in the matmuls, another grouping of the softmax,
// the ranks' partial sums), each within a few float ulps per op (docs/gpu.md); through the tiny
// models' layers into logits of magnitude ~10 that stays far below this.
inline constexpr float kCudaLogitTolerance = 1e-3f;

// The CPU backend of `weights` with the same options.
inline std::unique_ptr<Backend> cpu_backend(const ModelWeights& weights, BackendOptions options,
                                            kernels::ThreadPool& pool) {
  BackendSpec spec;
  spec.kind = BackendKind::cpu;
  spec.options = options;
  auto created = create_backend(spec, weights, pool);
  EXPECT_TRUE(created.ok()) << created.error().message;
  return created ? std::move(*created) : nullptr;
}

// Every CUDA logit is finite and within kCudaLogitTolerance of the CPU's; returns the largest
// difference. `what` names the comparison in a failure.
inline float expect_near_cpu(std::span<const float> cuda, std::span<const float> cpu,
                             std::string_view what) {
  EXPECT_EQ(cuda.size(), cpu.size()) << what;
  float largest = 0;
  for (std::size_t i = 0; i < std::min(cuda.size(), cpu.size()); ++i) {
    const float difference = std::abs(cuda[i] - cpu[i]);
    if (!(difference <= kCudaLogitTolerance)) {  // NaN fails too
      ADD_FAILURE() << what << ": logit " << i << " is " << cuda[i] << " on the CUDA path, "
                    << cpu[i] << " on the CPU backend";
      return difference;
    }
    largest = std::max(largest, difference);
  }
  return largest;
}

}  // namespace tern::engine
