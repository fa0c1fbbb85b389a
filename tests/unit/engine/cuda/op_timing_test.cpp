// Backend::time_ops (engine/backend/op_timing.h) on the CPU backend and the CUDA backend (the
// emulated device here; TERN_TEST_CUDA_BACKEND=cuda on a GPU): each timed pass lists every op of
// the model graph once, in order, with a finite time of its own, and timing changes no logit.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/backend/op_timing.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/cuda_test_backend_kind.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/cuda/mixed_steps.h"

namespace tern::engine {
namespace {

using namespace mixed_steps;

struct TimedRun {
  std::vector<float> logits;  // every step's, back to back
  std::vector<OpTime> ops;    // every timed pass's
};

// The mixed steps on `kind`, timed or not.
TimedRun run(BackendKind kind, const ModelWeights& weights, kernels::ThreadPool& pool, bool timed) {
  TimedRun result;
  auto backend = create_backend(spec_of(kind), weights, pool);
  EXPECT_TRUE(backend.ok()) << backend.error().message;
  if (!backend.ok()) return result;
  if (timed) {
    const Status timing = (*backend)->time_ops(&result.ops);
    EXPECT_TRUE(timing.ok()) << timing.message();
  }
  run_steps(**backend, [&](const std::vector<float>& logits) {
    result.logits.insert(result.logits.end(), logits.begin(), logits.end());
  });
  if (timed) {
    EXPECT_TRUE((*backend)->time_ops(nullptr).ok());
  }
  return result;
}

std::string describe(const OpTime& op) {
  return op.op + " " + op.operand + " layer " + std::to_string(op.layer);
}

TEST(OpTiming, EveryPassListsEveryOpOnceWithItsTimeAndTheLogitsStayTheSame) {
  TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
  TERN_REQUIRE_SHARED(model_path, "models/tinystories-656k-q8_0.gguf");
  auto weights = load_model(model_path.string());
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  kernels::ThreadPool pool(1);
  const TimedRun cpu = run(BackendKind::cpu, *weights, pool, true);
  const TimedRun device = run(kind, *weights, pool, true);
  const std::size_t passes = steps().size();
  ASSERT_FALSE(cpu.ops.empty());
  ASSERT_EQ(cpu.ops.size() % passes, 0u);
  const std::size_t per_pass = cpu.ops.size() / passes;
  // Both backends run the one model graph: the same ops, in the same order, every pass.
  ASSERT_EQ(device.ops.size(), cpu.ops.size());
  for (std::size_t i = 0; i < cpu.ops.size(); ++i) {
    EXPECT_EQ(describe(device.ops[i]), describe(cpu.ops[i])) << "op " << i;
    EXPECT_EQ(describe(cpu.ops[i]), describe(cpu.ops[i % per_pass])) << "op " << i;
    for (const TimedRun* timed : {&cpu, &device}) {
      EXPECT_TRUE(std::isfinite(timed->ops[i].seconds) && timed->ops[i].seconds >= 0)
          << describe(timed->ops[i]) << ": " << timed->ops[i].seconds;
    }
  }
  EXPECT_EQ(cpu.ops.front().op, "embed");
  EXPECT_EQ(cpu.ops.front().layer, OpTime::kNoLayer);
  // Two layers, each with its attention and its FFN matmuls; the output head's matmul.
  int attention = 0, head_matmuls = 0;
  for (std::size_t i = 0; i < per_pass; ++i) {
    attention += cpu.ops[i].op == "paged_attention" ? 1 : 0;
    head_matmuls += cpu.ops[i].op == "matmul" && cpu.ops[i].operand == "output" ? 1 : 0;
  }
  EXPECT_EQ(attention, weights->config().n_layers);
  EXPECT_EQ(head_matmuls, 1);

  for (const BackendKind backend : {BackendKind::cpu, kind}) {
    const TimedRun timed = backend == BackendKind::cpu ? cpu : device;
    EXPECT_EQ(run(backend, *weights, pool, false).logits, timed.logits) << to_string(backend);
  }
}

}  // namespace
}  // namespace tern::engine
