#include "tests/unit/engine/cuda/op_trace_comparison.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>

#include <fmt/format.h>

#include "engine/backend/cuda/device_model_weights.h"
#include "kernels/cpu/quant.h"
#include "tests/unit/engine/cuda/mixed_steps.h"

namespace tern::engine {
namespace {

class OpRecorder final : public OpObserver {
 public:
  void after_op(const OpEvent& event, const HostActivation& output) override {
    ops.push_back({step, event, output});
  }
  int step = 0;
  std::vector<RecordedOp> ops;
};

// How far an op's output lies from the CPU's, in units of the activation's scale: the largest
// |device - cpu| over max(1, the largest |cpu|).
struct Parting {
  float difference = 0;
  float scale = 0;
  std::size_t at = 0;
  float unit() const { return std::max(1.0f, scale); }
};

Parting parting(const HostActivation& device, const HostActivation& cpu) {
  Parting p;
  for (const float value : cpu.values) p.scale = std::max(p.scale, std::abs(value));
  for (std::size_t i = 0; i < cpu.values.size(); ++i) {
    const float difference = std::abs(device.values[i] - cpu.values[i]) / p.unit();
    if (!(difference <= p.difference)) {  // NaN wins
      p.difference = difference;
      p.at = i;
    }
  }
  return p;
}

// Whether a matmul's parting is its input's Q8_1 rounding: some quant of the two inputs rounded
// differently, and every output differs by no more than the rounded inputs' difference allows,
// sum_k |a_k - b_k| |w_jk|, plus the tolerance. A message saying so, or empty.
std::string requantization_explains(const WeightTensor& weight, const HostActivation& cpu_input,
                                    const HostActivation& device_input,
                                    const HostActivation& cpu_output,
                                    const HostActivation& device_output, float tolerance,
                                    float unit) {
  const auto width = static_cast<std::size_t>(cpu_input.width);
  const auto outputs = static_cast<std::size_t>(cpu_output.width);
  if (weight.cols != cpu_input.width || weight.rows != cpu_output.width || width % 32 != 0)
    return {};
  std::vector<float> w(outputs * width);
  for (std::size_t j = 0; j < outputs; ++j) {
    kernels::dequantize_row(weight.type, weight.data + j * weight.row_bytes, w.data() + j * width,
                            cpu_input.width);
  }
  std::size_t flipped = 0;
  float widest_share = 0;  // the largest output difference over its bound
  for (std::int64_t t = 0; t < cpu_input.rows; ++t) {
    const auto row = [&](const HostActivation& a, std::size_t n) {
      return std::span<const float>(a.values).subspan(static_cast<std::size_t>(t) * n, n);
    };
    const RoundedRow a = round_to_q8_1(row(cpu_input, width));
    const RoundedRow b = round_to_q8_1(row(device_input, width));
    for (std::size_t k = 0; k < width; ++k) flipped += a.quants[k] != b.quants[k] ? 1 : 0;
    for (std::size_t j = 0; j < outputs; ++j) {
      double bound = 0;
      for (std::size_t k = 0; k < width; ++k)
        bound +=
            std::abs(static_cast<double>(a.values[k]) - b.values[k]) * std::abs(w[j * width + k]);
      const double difference = std::abs(static_cast<double>(row(device_output, outputs)[j]) -
                                         row(cpu_output, outputs)[j]);
      if (difference > bound + static_cast<double>(tolerance) * unit) return {};
      if (bound > 0) widest_share = std::max(widest_share, static_cast<float>(difference / bound));
    }
  }
  if (flipped == 0) return {};
  return fmt::format(
      "{} of its input's {} Q8_1 quants rounded the other way, and every output lies within what "
      "that explains (at most {:.2f} of the bound)",
      flipped, static_cast<std::size_t>(cpu_input.rows) * width, widest_share);
}

}  // namespace

const WeightTensor* matmul_weight(const ModelWeights& weights, const OpEvent& event) {
  if (event.op != "matmul") return nullptr;
  if (event.operand == "output") return &weights.output();
  if (event.layer < 0 || static_cast<std::size_t>(event.layer) >= weights.layers().size())
    return nullptr;
  const LayerWeights& layer = weights.layers()[static_cast<std::size_t>(event.layer)];
  const std::pair<std::string_view, const WeightTensor*> matrices[] = {
      {"wq", &layer.wq},         {"wk", &layer.wk},     {"wv", &layer.wv},        {"wo", &layer.wo},
      {"w_gate", &layer.w_gate}, {"w_up", &layer.w_up}, {"w_down", &layer.w_down}};
  for (const auto& [name, tensor] : matrices)
    if (event.operand == name) return tensor;
  return nullptr;
}

RoundedRow round_to_q8_1(std::span<const float> row) {
  RoundedRow rounded{std::vector<int>(row.size()), std::vector<float>(row.size())};
  for (std::size_t block = 0; block + 32 <= row.size(); block += 32) {
    float amax = 0;
    for (std::size_t i = block; i < block + 32; ++i) amax = std::max(amax, std::abs(row[i]));
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    for (std::size_t i = block; i < block + 32; ++i) {
      rounded.quants[i] = static_cast<int>(std::nearbyint(row[i] * inverse));
      rounded.values[i] = static_cast<float>(rounded.quants[i]) * d;
    }
  }
  return rounded;
}

std::vector<RecordedOp> record_op_trace(Backend& backend) {
  OpRecorder recorder;
  const Status observing = backend.observe_ops(&recorder);
  EXPECT_TRUE(observing.ok()) << observing.message();
  mixed_steps::run_steps(backend, [&](const std::vector<float>&) { ++recorder.step; });
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

OpTraceComparison compare_op_traces(const ModelWeights& weights, const std::vector<RecordedOp>& cpu,
                                    const std::vector<RecordedOp>& device,
                                    std::string_view device_name, float tolerance) {
  OpTraceComparison result;
  if (cpu.empty()) {
    result.failure = "the cpu backend's trace is empty";
    return result;
  }
  if (device.size() != cpu.size()) {
    result.failure = fmt::format("the backends ran different op sequences: {} ops on cpu, {} on {}",
                                 cpu.size(), device.size(), device_name);
    return result;
  }
  std::size_t worst = 0;
  Parting worst_parting;
  // Each activation's last writer and its parting, for what a parting op read.
  std::map<Activation, std::size_t> writer;
  std::map<Activation, Parting> last;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const RecordedOp& want = cpu[i];
    const RecordedOp& got = device[i];
    result.ops = i + 1;
    if (describe(got) != describe(want) || got.output.rows != want.output.rows ||
        got.output.width != want.output.width) {
      result.failure = fmt::format("the op sequences differ at event {}: {} on cpu, {} on {}", i,
                                   describe(want), describe(got), device_name);
      return result;
    }
    const Parting p = parting(got.output, want.output);
    if (!(p.difference <= tolerance)) {
      const std::optional<Activation> input = want.event.input;
      const bool input_seen = input && writer.contains(*input);
      std::string read;
      if (input_seen) {
        read = fmt::format("; its input {} differed by {:.3g} of its scale {:.3g}",
                           activation_name(*input), last[*input].difference, last[*input].scale);
      }
      const std::string parts = fmt::format(
          "{}: [{}][{}] is {} on {}, {} on cpu ({:.3g} of the activation's scale {:.3g}; {:.3g} "
          "allowed){}",
          describe(want), static_cast<std::int64_t>(p.at) / want.output.width,
          static_cast<std::int64_t>(p.at) % want.output.width, got.output.values[p.at], device_name,
          want.output.values[p.at], p.difference, p.scale, tolerance, read);
      const WeightTensor* weight = matmul_weight(weights, want.event);
      if (weight != nullptr && cuda::reads_q8_1_activations(weight->type) && input_seen) {
        const std::size_t source = writer[*input];
        const std::string explained =
            requantization_explains(*weight, cpu[source].output, device[source].output, want.output,
                                    got.output, tolerance, p.unit());
        if (!explained.empty()) {
          result.requantization = fmt::format(
              "the first op that parts is {}, a requantization: {}. The ops after it inherit it "
              "and are not compared",
              parts, explained);
          break;
        }
      }
      result.failure = "the first op that parts is " + parts;
      return result;
    }
    writer[want.event.output] = i;
    last[want.event.output] = p;
    if (p.difference > worst_parting.difference) {
      worst_parting = p;
      worst = i;
    }
  }
  result.widest = fmt::format("the widest agreeing op is {} at {:.3g} of scale {:.3g}",
                              describe(cpu[worst]), worst_parting.difference, worst_parting.scale);
  return result;
}

}  // namespace tern::engine
