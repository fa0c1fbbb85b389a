#include "engine/backend/op_trace.h"

namespace tern::engine {

std::string_view activation_name(Activation activation) {
  switch (activation) {
    case Activation::x:
      return "x";
    case Activation::normed:
      return "normed";
    case Activation::q:
      return "q";
    case Activation::k:
      return "k";
    case Activation::v:
      return "v";
    case Activation::attention:
      return "attention";
    case Activation::projected:
      return "projected";
    case Activation::gate:
      return "gate";
    case Activation::up:
      return "up";
    case Activation::logit_rows:
      return "logit_rows";
    case Activation::logits:
      return "logits";
    case Activation::router_logits:
      return "router_logits";
    case Activation::shared_gate:
      return "shared_gate";
    case Activation::shared_up:
      return "shared_up";
    case Activation::shared_out:
      return "shared_out";
    case Activation::q_lora:
      return "q_lora";
    case Activation::latent:
      return "latent";
  }
  return "?";
}

std::string_view matrix_name(Matrix matrix) {
  switch (matrix) {
    case Matrix::wq:
      return "wq";
    case Matrix::wk:
      return "wk";
    case Matrix::wv:
      return "wv";
    case Matrix::wo:
      return "wo";
    case Matrix::w_gate:
      return "w_gate";
    case Matrix::w_up:
      return "w_up";
    case Matrix::w_down:
      return "w_down";
    case Matrix::output:
      return "output";
    case Matrix::router:
      return "router";
    case Matrix::shared_gate:
      return "shared_gate";
    case Matrix::shared_up:
      return "shared_up";
    case Matrix::shared_down:
      return "shared_down";
    case Matrix::q_a:
      return "q_a";
    case Matrix::q_b:
      return "q_b";
    case Matrix::kv_a:
      return "kv_a";
  }
  return "?";
}

std::string_view vector_name(Vector vector) {
  switch (vector) {
    case Vector::attn_norm:
      return "attn_norm";
    case Vector::ffn_norm:
      return "ffn_norm";
    case Vector::bq:
      return "bq";
    case Vector::bk:
      return "bk";
    case Vector::bv:
      return "bv";
    case Vector::q_norm:
      return "q_norm";
    case Vector::k_norm:
      return "k_norm";
    case Vector::output_norm:
      return "output_norm";
    case Vector::q_a_norm:
      return "q_a_norm";
  }
  return "?";
}

void ObservedBatchOps::show(std::string_view op, std::string_view operand, Activation output,
                            std::optional<Activation> input) {
  if (!status_.ok()) return;
  if (Status read = reader_.read_activation(output, scratch_); !read.ok()) {
    status_ = std::move(read);
    return;
  }
  const OpEvent event{events_++, op, operand, layer_, output, input};
  observer_.after_op(event, scratch_);
}

void ObservedBatchOps::embed(Activation out) {
  inner_.embed(out);
  layer_ = OpEvent::kNoLayer;
  show("embed", "", out);
}

void ObservedBatchOps::rms_norm(Activation in, std::optional<Activation> residual, VectorRef weight,
                                std::int32_t rows_per_token, std::int32_t width, Activation out) {
  inner_.rms_norm(in, residual, weight, rows_per_token, width, out);
  layer_ = weight.name == Vector::output_norm ? OpEvent::kNoLayer : weight.layer;
  if (residual && in != out) show("rms_norm", vector_name(weight.name), in);
  show("rms_norm", vector_name(weight.name), out);
}

void ObservedBatchOps::matmul(std::int32_t layer, std::span<const MatmulOutput> group,
                              Activation in) {
  inner_.matmul(layer, group, in);
  for (const MatmulOutput& member : group) {
    layer_ = member.weight == Matrix::output ? OpEvent::kNoLayer : layer;
    show("matmul", matrix_name(member.weight), member.out, in);
  }
}

void ObservedBatchOps::add_bias(VectorRef bias, Activation rows) {
  inner_.add_bias(bias, rows);
  layer_ = bias.layer;
  show("add_bias", vector_name(bias.name), rows);
}

void ObservedBatchOps::rope(Activation rows, std::int32_t heads) {
  inner_.rope(rows, heads);
  show("rope", "", rows);
}

void ObservedBatchOps::store_kv(std::int32_t layer, Activation k, Activation v) {
  inner_.store_kv(layer, k, v);
  layer_ = layer;
}

void ObservedBatchOps::paged_attention(std::int32_t layer, Activation q, Activation out) {
  inner_.paged_attention(layer, q, out);
  layer_ = layer;
  show("paged_attention", "", out);
}

void ObservedBatchOps::add(Activation into, Activation from) {
  inner_.add(into, from);
  show("add", activation_name(from), into);
}

void ObservedBatchOps::silu_mul(Activation gate, Activation up, Activation out) {
  inner_.silu_mul(gate, up, out);
  show("silu_mul", "", out);
}

void ObservedBatchOps::gather_logit_rows(Activation from, Activation to) {
  inner_.gather_logit_rows(from, to);
  layer_ = OpEvent::kNoLayer;
  show("gather_logit_rows", activation_name(from), to);
}

void ObservedBatchOps::all_reduce(Activation rows) {
  inner_.all_reduce(rows);
  show("all_reduce", "", rows);
}

void ObservedBatchOps::route_experts(std::int32_t layer, Activation logits) {
  inner_.route_experts(layer, logits);
  layer_ = layer;
}

void ObservedBatchOps::expert_ffn(std::int32_t layer, Activation in, Activation out) {
  inner_.expert_ffn(layer, in, out);
  layer_ = layer;
  show("expert_ffn", "", out, in);
}

void ObservedBatchOps::store_latent_kv(std::int32_t layer, Activation latent) {
  inner_.store_latent_kv(layer, latent);
  layer_ = layer;
}

void ObservedBatchOps::latent_attention(std::int32_t layer, Activation q, Activation out) {
  inner_.latent_attention(layer, q, out);
  layer_ = layer;
  show("latent_attention", "", out);
}

}  // namespace tern::engine
