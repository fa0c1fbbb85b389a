#include "engine/backend/op_timing.h"

#include <iterator>

#include <fmt/format.h>

#include "engine/backend/op_trace.h"

namespace tern::engine {

void ClockOpMarks::mark(std::size_t index) {
  if (marks_.size() <= index) marks_.resize(index + 1);
  marks_[index] = std::chrono::steady_clock::now();
}

Expected<double> ClockOpMarks::seconds_between(std::size_t from, std::size_t to) {
  if (from >= marks_.size() || to >= marks_.size()) {
    return Error{fmt::format("op timing: marks {} and {} of {} made", from, to, marks_.size())};
  }
  return std::chrono::duration<double>(marks_[to] - marks_[from]).count();
}

Status add_op_times(TimedBatchOps& pass, OpMarks& marks, std::vector<OpTime>& out) {
  std::vector<OpTime>& ops = pass.ops();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    Expected<double> seconds = marks.seconds_between(2 * i, 2 * i + 1);
    if (!seconds.ok()) return seconds.error();
    ops[i].seconds = *seconds;
  }
  out.insert(out.end(), std::make_move_iterator(ops.begin()), std::make_move_iterator(ops.end()));
  ops.clear();
  return Status::success();
}

template <class Run>
void TimedBatchOps::timed(std::string_view op, std::string operand, Run&& run) {
  marks_.mark(2 * ops_.size());
  run();
  marks_.mark(2 * ops_.size() + 1);
  ops_.push_back({std::string(op), std::move(operand), layer_, 0.0});
}

void TimedBatchOps::embed(Activation out) {
  layer_ = OpTime::kNoLayer;
  timed("embed", "", [&] { inner_.embed(out); });
}

void TimedBatchOps::rms_norm(Activation in, std::optional<Activation> residual, VectorRef weight,
                             std::int32_t rows_per_token, std::int32_t width, Activation out) {
  layer_ = weight.name == Vector::output_norm ? OpTime::kNoLayer : weight.layer;
  timed("rms_norm", std::string(vector_name(weight.name)),
        [&] { inner_.rms_norm(in, residual, weight, rows_per_token, width, out); });
}

void TimedBatchOps::matmul(std::int32_t layer, std::span<const MatmulOutput> group, Activation in) {
  std::string operand;
  for (const MatmulOutput& member : group) {
    if (!operand.empty()) operand += '+';
    operand += matrix_name(member.weight);
  }
  layer_ = !group.empty() && group.front().weight == Matrix::output ? OpTime::kNoLayer : layer;
  timed("matmul", std::move(operand), [&] { inner_.matmul(layer, group, in); });
}

void TimedBatchOps::add_bias(VectorRef bias, Activation rows) {
  layer_ = bias.layer;
  timed("add_bias", std::string(vector_name(bias.name)), [&] { inner_.add_bias(bias, rows); });
}

void TimedBatchOps::rope(Activation rows, std::int32_t heads) {
  timed("rope", std::string(activation_name(rows)), [&] { inner_.rope(rows, heads); });
}

void TimedBatchOps::store_kv(std::int32_t layer, Activation k, Activation v) {
  layer_ = layer;
  timed("store_kv", "", [&] { inner_.store_kv(layer, k, v); });
}

void TimedBatchOps::paged_attention(std::int32_t layer, Activation q, Activation out) {
  layer_ = layer;
  timed("paged_attention", "", [&] { inner_.paged_attention(layer, q, out); });
}

void TimedBatchOps::add(Activation into, Activation from) {
  timed("add", std::string(activation_name(from)), [&] { inner_.add(into, from); });
}

void TimedBatchOps::silu_mul(Activation gate, Activation up, Activation out) {
  timed("silu_mul", "", [&] { inner_.silu_mul(gate, up, out); });
}

void TimedBatchOps::gather_logit_rows(Activation from, Activation to) {
  layer_ = OpTime::kNoLayer;
  timed("gather_logit_rows", "", [&] { inner_.gather_logit_rows(from, to); });
}

void TimedBatchOps::all_reduce(Activation rows) {
  timed("all_reduce", std::string(activation_name(rows)), [&] { inner_.all_reduce(rows); });
}

void TimedBatchOps::route_experts(std::int32_t layer, Activation logits) {
  layer_ = layer;
  timed("route_experts", "", [&] { inner_.route_experts(layer, logits); });
}

void TimedBatchOps::expert_ffn(std::int32_t layer, Activation in, Activation out) {
  layer_ = layer;
  timed("expert_ffn", "", [&] { inner_.expert_ffn(layer, in, out); });
}

void TimedBatchOps::store_latent_kv(std::int32_t layer, Activation latent) {
  layer_ = layer;
  timed("store_latent_kv", "", [&] { inner_.store_latent_kv(layer, latent); });
}

void TimedBatchOps::latent_attention(std::int32_t layer, Activation q, Activation out) {
  layer_ = layer;
  timed("latent_attention", "", [&] { inner_.latent_attention(layer, q, out); });
}

}  // namespace tern::engine
