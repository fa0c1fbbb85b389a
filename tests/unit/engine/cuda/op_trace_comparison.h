#pragma once

// The CUDA backend's op trace (engine/backend/op_trace.h) against the CPU backend's, op by op:
// where the two first part, and whether that parting is a Q8_1 rounding that went the other way.
//
// A matmul over a quantized format rounds its input to Q8_1 (d = amax / 127, q = rint(x / d)) on
// both backends, with the same bits for the same input. An input that differs in its last bits (a
// device's rsqrtf in the norm, its expf in SiLU, nvcc's fused multiply-adds) can round one quant
// the other way: a step of d, which moves an output by d times a weight, 1e-3 to 1e-2 of the
// activation's scale in the shared tiny models. That is not a kernel parting; every op after it
// inherits it. compare_op_traces recognises it and checks it: the matmul must part by no more than
// the two rounded inputs' difference explains, element by element.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/op_trace.h"
#include "engine/model/model_weights.h"

namespace tern::engine {

struct RecordedOp {
  int step = 0;
  OpEvent event;
  HostActivation output;
};

// The weight a matmul event applied (by its operand's name), or nullptr for another op.
const WeightTensor* matmul_weight(const ModelWeights& weights, const OpEvent& event);

// A row rounded to Q8_1 as both backends round it (quantize_q8_1_kernel.cuh: blocks of 32,
// d = amax / 127, q = rint(x * (1 / d))): its quants and the values they stand for.
struct RoundedRow {
  std::vector<int> quants;
  std::vector<float> values;
};
RoundedRow round_to_q8_1(std::span<const float> row);

// Every op of mixed_steps::run_steps on `backend`, traced.
std::vector<RecordedOp> record_op_trace(Backend& backend);

// "step S op N (layer L): matmul wv -> v (from normed)".
std::string describe(const RecordedOp& op);

struct OpTraceComparison {
  std::size_t ops = 0;  // ops compared, up to where the comparison stopped
  // The first op past the tolerance that a requantization does not explain, as a message;
  // empty when there is none.
  std::string failure;
  // Where a requantization explained the first parting (the comparison stops there), as a
  // message; empty when no op parted.
  std::string requantization;
  std::string widest;  // the widest agreeing op and its difference, as a message
};

// `device` against `cpu`, each op within `tolerance` of the activation's scale (max(1, its
// largest |value|)). `weights` gives the matmuls' weights, to check a requantization's bound.
OpTraceComparison compare_op_traces(const ModelWeights& weights, const std::vector<RecordedOp>& cpu,
                                    const std::vector<RecordedOp>& device,
                                    std::string_view device_name, float tolerance);

}  // namespace tern::engine
