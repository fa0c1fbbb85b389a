// The CUDA backend against the CPU backend op by op (engine/backend/op_trace.h): both run the
// mixed steps with an observer, and every activation each op wrote is compared. Where the logits
// part (CudaBackendLogits), this names the first op that parts, its layer and step, so a run on
// a real GPU (scripts/gpu_report.sh's tests section) says where to look.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/backend/backend_factory.h"
#include "engine/backend/op_trace.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/cuda_test_backend_kind.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/cuda/cpu_reference.h"
#include "tests/unit/engine/cuda/mixed_steps.h"

namespace tern::engine {
namespace {

using namespace mixed_steps;

struct RecordedOp {
  int step = 0;
  OpEvent event;
  HostActivation output;
};

class OpRecorder final : public OpObserver {
 public:
  void after_op(const OpEvent& event, const HostActivation& output) override {
    ops.push_back({step, event, output});
  }
  int step = 0;
  std::vector<RecordedOp> ops;
};

std::vector<RecordedOp> record(Backend& backend) {
  OpRecorder recorder;
  const Status observing = backend.observe_ops(&recorder);
  EXPECT_TRUE(observing.ok()) << observing.message();
  run_steps(backend, [&](const std::vector<float>&) { ++recorder.step; });
  EXPECT_TRUE(backend.observe_ops(nullptr).ok());
  return std::move(recorder.ops);
}

std::string describe(const RecordedOp& op) {
  const OpEvent& e = op.event;
  std::string where = e.layer == OpEvent::kNoLayer ? "head" : fmt::format("layer {}", e.layer);
  std::string what = fmt::format("{}{}{} -> {}", e.op, e.operand.empty() ? "" : " ", e.operand,
                                 activation_name(e.output));
  if (e.input) what += fmt::format(" (from {})", activation_name(*e.input));
  return fmt::format("step {} op {} ({}): {}", op.step, e.index, where, what);
}

// How far an op's output lies from the CPU's, in units of the activation's scale: the largest
// |cuda - cpu| over max(1, the largest |cpu|). One op rounds within a few float ulps
// (cpu_reference.h), so an op past kOpTolerance is where the two part, not where an earlier
// difference grew.
struct Parting {
  float difference = 0;
  float scale = 0;
  std::size_t at = 0;
};

Parting parting(const HostActivation& cuda, const HostActivation& cpu) {
  Parting p;
  for (const float value : cpu.values) p.scale = std::max(p.scale, std::abs(value));
  const float unit = std::max(1.0f, p.scale);
  for (std::size_t i = 0; i < cpu.values.size(); ++i) {
    const float difference = std::abs(cuda.values[i] - cpu.values[i]) / unit;
    if (!(difference <= p.difference)) {  // NaN wins
      p.difference = difference;
      p.at = i;
    }
  }
  return p;
}

constexpr float kOpTolerance = kCudaLogitTolerance;

class CudaOpTrace : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaOpTrace, EveryOpMatchesTheCpuBackend) {
  TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
  TERN_REQUIRE_SHARED(model_path, GetParam());
  auto weights = load_model(model_path.string());
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  kernels::ThreadPool pool(1);
  auto cpu = create_backend(spec_of(BackendKind::cpu), *weights, pool);
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  auto cuda = create_backend(spec_of(kind), *weights, pool);
  ASSERT_TRUE(cuda.ok()) << cuda.error().message;

  const std::vector<RecordedOp> expected = record(**cpu);
  const std::vector<RecordedOp> actual = record(**cuda);
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(actual.size(), expected.size()) << "the backends ran different op sequences";

  std::size_t worst = 0;
  Parting worst_parting;
  // The last parting of each activation, for what a failing op read.
  std::map<Activation, Parting> last;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const RecordedOp& want = expected[i];
    const RecordedOp& got = actual[i];
    ASSERT_EQ(describe(got), describe(want)) << "the op sequences differ at event " << i;
    ASSERT_EQ(got.output.rows, want.output.rows) << describe(want);
    ASSERT_EQ(got.output.width, want.output.width) << describe(want);
    const Parting p = parting(got.output, want.output);
    if (!(p.difference <= kOpTolerance)) {
      const auto row = static_cast<std::int64_t>(p.at) / want.output.width;
      const auto column = static_cast<std::int64_t>(p.at) % want.output.width;
      std::string input;
      if (want.event.input && last.contains(*want.event.input)) {
        // A matmul of a quantized format rounds its input to Q8_1: an input within a few ulps
        // whose output parts points at a rounding that went the other way, not at the matmul.
        input = fmt::format("; its input {} differed by {:.3g} of its scale {:.3g}",
                            activation_name(*want.event.input), last[*want.event.input].difference,
                            last[*want.event.input].scale);
      }
      FAIL() << GetParam() << ": the first op that parts is " << describe(want) << ": [" << row
             << "][" << column << "] is " << got.output.values[p.at] << " on " << kind_name << ", "
             << want.output.values[p.at] << " on cpu (" << p.difference
             << " of the activation's scale " << p.scale << "; " << kOpTolerance << " allowed)"
             << input;
    }
    last[want.event.output] = p;
    if (p.difference > worst_parting.difference) {
      worst_parting = p;
      worst = i;
    }
  }
  std::printf("%s: %zu ops over %zu steps agree; the widest is %s at %.3g of scale %.3g\n",
              GetParam(), expected.size(), steps().size(), describe(expected[worst]).c_str(),
              static_cast<double>(worst_parting.difference),
              static_cast<double>(worst_parting.scale));
}

INSTANTIATE_TEST_SUITE_P(SharedModels, CudaOpTrace,
                         ::testing::Values("models/tinystories-656k-f32.gguf",
                                           "models/tinystories-656k-q8_0.gguf",
                                           "models/tinystories-656k-q4_0.gguf",
                                           "models/random-qwen2-tiny", "models/random-qwen3-tiny"));

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
      OpRecorder recorder;
      if (traced == 1) {
        ASSERT_TRUE((*backend)->observe_ops(&recorder).ok());
      }
      run_steps(**backend, [&](const std::vector<float>& out) {
        logits[traced].insert(logits[traced].end(), out.begin(), out.end());
      });
      if (traced == 1) {
        EXPECT_FALSE(recorder.ops.empty());
      }
    }
    EXPECT_EQ(logits[0], logits[1]);
  }
}

}  // namespace
}  // namespace tern::engine
