// compare_op_traces on the CPU backend's trace of the Q4_0 TinyStories file against altered copies
// of it: a requantization is recognised only where an input's Q8_1 rounding went the other way
// and the matmul parts by no more than that explains.

#include "tests/unit/engine/cuda/op_trace_comparison.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/cuda/mixed_steps.h"

namespace tern::engine {
namespace {

constexpr const char* kModel = "models/tinystories-656k-q4_0.gguf";
// Tighter than the backend tests' 1e-3: one quant's step moves these matmuls' outputs by 1e-5 to
// 1e-3 of their scale, and the element moved to flip it lies closer than 1e-5 to its boundary.
constexpr float kTolerance = 1e-5f;

// The first matmul that reads `writer`'s output, by index into the trace.
std::optional<std::size_t> first_reader(const std::vector<RecordedOp>& trace, std::size_t writer) {
  for (std::size_t i = writer + 1; i < trace.size(); ++i) {
    if (trace[i].event.input == trace[writer].event.output) return i;
    if (trace[i].event.output == trace[writer].event.output) return std::nullopt;
  }
  return std::nullopt;
}

// A copy of `cpu` in which one element of the rms_norm output that a quantized matmul reads has
// moved just past a Q8_1 rounding boundary, and that matmul's output moved as its rounded input
// did (exactly, in double): what a device whose norm rounded one ulp-sized step differently shows.
struct Requantized {
  std::vector<RecordedOp> trace;
  std::size_t matmul = 0;
};

Requantized requantize_one_input(const ModelWeights& weights, std::vector<RecordedOp> cpu) {
  // The element closest to a rounding boundary, over every normed row a quantized matmul reads.
  struct Candidate {
    std::size_t writer = 0, matmul = 0, at = 0;
    float nudged = 0;
    float distance = std::numeric_limits<float>::infinity();
  } best;
  for (std::size_t w = 0; w < cpu.size(); ++w) {
    if (cpu[w].event.op != "rms_norm") continue;
    const std::optional<std::size_t> reader = first_reader(cpu, w);
    if (!reader || cpu[*reader].event.op != "matmul") continue;
    const HostActivation& x = cpu[w].output;
    for (std::size_t block = 0; block + 32 <= x.values.size(); block += 32) {
      const std::span<const float> values(x.values.data() + block, 32);
      const RoundedRow rounded = round_to_q8_1(values);
      const auto largest = static_cast<std::size_t>(
          std::ranges::max_element(values, {}, [](float v) { return std::abs(v); }) -
          values.begin());
      const float d = std::abs(values[largest]) / 127.0f;
      for (std::size_t i = 0; i < 32; ++i) {
        if (i == largest) continue;  // keep d as it is
        const float scaled = values[i] / d;
        const float boundary = std::floor(scaled) + 0.5f;
        // Just across the boundary, on the far side of where the value lies; a value on a
        // boundary (a tie) is left alone.
        std::vector<float> moved(values.begin(), values.end());
        moved[i] = (scaled < boundary ? boundary + 1e-3f : boundary - 1e-3f) * d;
        const float distance = std::abs(moved[i] - values[i]);
        if (distance < best.distance && round_to_q8_1(moved).quants[i] != rounded.quants[i])
          best = {w, *reader, block + i, moved[i], distance};
      }
    }
  }
  EXPECT_TRUE(std::isfinite(best.distance));
  HostActivation& normed = cpu[best.writer].output;
  const std::size_t block = best.at - best.at % 32;
  const std::span<const float> values(normed.values.data() + block, 32);
  const float before = round_to_q8_1(values).values[best.at - block];
  normed.values[best.at] = best.nudged;

  // The matmul's outputs move by (rounded after - rounded before) * w[j][k].
  const auto width = static_cast<std::size_t>(normed.width);
  const std::size_t row = best.at / width, k = best.at % width;
  const double step = static_cast<double>(round_to_q8_1(values).values[best.at - block]) - before;
  EXPECT_NE(step, 0.0);
  RecordedOp& matmul = cpu[best.matmul];
  const WeightTensor* weight = matmul_weight(weights, matmul.event);
  EXPECT_NE(weight, nullptr) << matmul.event.operand;
  if (weight == nullptr) return {std::move(cpu), best.matmul};
  std::vector<float> w_row(width);
  for (std::int64_t j = 0; j < matmul.output.width; ++j) {
    kernels::dequantize_row(weight->type, weight->data + j * weight->row_bytes, w_row.data(),
                            weight->cols);
    float& y = matmul.output.values[row * static_cast<std::size_t>(matmul.output.width) + j];
    y = static_cast<float>(y + step * w_row[k]);
  }
  return {std::move(cpu), best.matmul};
}

class CompareOpTraces : public ::testing::Test {
 protected:
  void SetUp() override {
    TERN_REQUIRE_SHARED(model_path, kModel);
    auto weights = load_model(model_path.string());
    ASSERT_TRUE(weights.ok()) << weights.error().message;
    weights_.emplace(std::move(*weights));
    auto cpu = create_backend(mixed_steps::spec_of(BackendKind::cpu), *weights_, pool_);
    ASSERT_TRUE(cpu.ok()) << cpu.error().message;
    cpu_ = record_op_trace(**cpu);
    ASSERT_FALSE(cpu_.empty());
  }
  OpTraceComparison compare(const std::vector<RecordedOp>& device) const {
    return compare_op_traces(*weights_, cpu_, device, "altered", kTolerance);
  }

  kernels::ThreadPool pool_{1};
  std::optional<ModelWeights> weights_;
  std::vector<RecordedOp> cpu_;
};

TEST_F(CompareOpTraces, IdenticalTracesAgree) {
  const auto compared = compare(cpu_);
  EXPECT_TRUE(compared.failure.empty()) << compared.failure;
  EXPECT_TRUE(compared.requantization.empty());
  EXPECT_EQ(compared.ops, cpu_.size());
}

TEST_F(CompareOpTraces, AFlippedInputQuantIsARequantization) {
  const Requantized altered = requantize_one_input(*weights_, cpu_);
  const auto compared = compare(altered.trace);
  EXPECT_TRUE(compared.failure.empty()) << compared.failure;
  EXPECT_NE(compared.requantization.find("a requantization: 1 of its input's"), std::string::npos)
      << compared.requantization;
  EXPECT_EQ(compared.ops, altered.matmul + 1);
}

TEST_F(CompareOpTraces, AMatmulPartingPastWhatTheFlipExplainsFails) {
  Requantized altered = requantize_one_input(*weights_, cpu_);
  altered.trace[altered.matmul].output.values[0] += 0.05f;
  const auto compared = compare(altered.trace);
  EXPECT_NE(compared.failure.find("the first op that parts is " +
                                  describe(altered.trace[altered.matmul])),
            std::string::npos)
      << compared.failure;
  EXPECT_TRUE(compared.requantization.empty());
}

TEST_F(CompareOpTraces, AMatmulPartingOnTheSameInputFails) {
  std::vector<RecordedOp> altered = cpu_;
  std::size_t matmul = 0;
  while (altered[matmul].event.op != "matmul" || altered[matmul].event.operand != "wv") ++matmul;
  altered[matmul].output.values[0] += 0.05f;
  const auto compared = compare(altered);
  EXPECT_NE(compared.failure.find("matmul wv"), std::string::npos) << compared.failure;
  EXPECT_TRUE(compared.requantization.empty());
}

}  // namespace
}  // namespace tern::engine
