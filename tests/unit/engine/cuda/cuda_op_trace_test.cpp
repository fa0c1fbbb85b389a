// The CUDA backend against the CPU backend op by op (engine/backend/op_trace.h): both run the
// mixed steps with an observer, and every activation each op wrote is compared
// (op_trace_comparison.h). Where the logits part (CudaBackendLogits), this names the first op that
// parts, its layer and step, so a run on a real GPU (scripts/gpu_report.sh's tests section) says
// where to look, or shows the parting to be a Q8_1 rounding of an input that differs in its last
// bits, within the bound that rounding sets.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/backend/op_trace.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/cuda_test_backend_kind.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/cuda/cpu_reference.h"
#include "tests/unit/engine/cuda/mixed_steps.h"
#include "tests/unit/engine/cuda/op_trace_comparison.h"

namespace tern::engine {
namespace {

using namespace mixed_steps;

constexpr float kOpTolerance = kCudaLogitTolerance;

class CudaOpTrace : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaOpTrace, EveryOpMatchesTheCpuBackend) {
  TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
  TERN_REQUIRE_SHARED(model_path, GetParam());
  SideBySide backends(model_path.string(), kind);
  ASSERT_TRUE(backends.error.empty()) << backends.error;

  const std::vector<RecordedOp> expected = record_op_trace(*backends.cpu);
  const std::vector<RecordedOp> actual = record_op_trace(*backends.cuda);
  const OpTraceComparison compared =
      compare_op_traces(*backends.weights, expected, actual, kind_name, kOpTolerance);
  ASSERT_TRUE(compared.failure.empty()) << GetParam() << ": " << compared.failure;
  if (!compared.requantization.empty()) {
    std::printf("%s: %s\n", GetParam(), compared.requantization.c_str());
  } else {
    std::printf("%s: %zu ops over %zu steps agree; %s\n", GetParam(), compared.ops, steps().size(),
                compared.widest.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, CudaOpTrace,
                         ::testing::Values("models/tinystories-656k-f32.gguf",
                                           "models/tinystories-656k-q8_0.gguf",
                                           "models/tinystories-656k-q4_0.gguf",
                                           "models/random-qwen2-tiny", "models/random-qwen3-tiny"));

class CountingObserver final : public OpObserver {
 public:
  void after_op(const OpEvent&, const HostActivation&) override { ++ops; }
  int ops = 0;
};

// Tracing changes nothing: the traced pass's logits equal the untraced pass's bit for bit, on
// both backends (the CUDA one runs its decode steps eagerly while traced, not from its graphs).
TEST(OpTrace, TracedLogitsEqualUntracedOnes) {
  TERN_REQUIRE_SHARED(model_path, "models/tinystories-656k-q4_0.gguf");
  auto weights = load_model(model_path.string());
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  kernels::ThreadPool pool(1);
  for (const BackendKind kind : {BackendKind::cpu, BackendKind::cuda_emulated}) {
    if (!check_backend_available(BackendSpec{.kind = kind}).ok()) continue;
    std::vector<float> logits[2];
    for (int traced = 0; traced < 2; ++traced) {
      auto backend = create_backend(spec_of(kind), *weights, pool);
      ASSERT_TRUE(backend.ok()) << backend.error().message;
      CountingObserver observer;
      if (traced == 1) {
        ASSERT_TRUE((*backend)->observe_ops(&observer).ok());
      }
      run_steps(**backend, [&](const std::vector<float>& out) {
        logits[traced].insert(logits[traced].end(), out.begin(), out.end());
      });
      if (traced == 1) {
        EXPECT_GT(observer.ops, 0);
      }
    }
    EXPECT_EQ(logits[0], logits[1]);
  }
}

}  // namespace
}  // namespace tern::engine
