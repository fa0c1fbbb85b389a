#include "engine/model/llama_graph.h"

namespace tern::engine {
namespace {

using enum Activation;

// Q/K/V projections, RoPE, the paged KV cache and attention; the result is in `attention`.
void grouped_query_attention(const GraphSpec& spec, std::int32_t layer, BatchOps& ops) {
  const RankShape& shape = spec.shape;
  const MatmulOutput qkv[] = {{Matrix::wq, q}, {Matrix::wk, k}, {Matrix::wv, v}};
  ops.matmul(layer, qkv, normed);
  if (spec.qkv_bias) {
    ops.add_bias({layer, Vector::bq}, q);
    ops.add_bias({layer, Vector::bk}, k);
    ops.add_bias({layer, Vector::bv}, v);
  }
  if (spec.qk_norm) {
    ops.rms_norm(q, std::nullopt, {layer, Vector::q_norm}, shape.n_heads, shape.head_dim, q);
    ops.rms_norm(k, std::nullopt, {layer, Vector::k_norm}, shape.n_kv_heads, shape.head_dim, k);
  }
  ops.rope(q, shape.n_heads);
  ops.rope(k, shape.n_kv_heads);
  ops.store_kv(layer, k, v);
  ops.paged_attention(layer, q, attention);
}

// DeepSeek's multi-head latent attention: the cache holds one compressed latent per token.
void latent_attention(const GraphSpec& spec, std::int32_t layer, BatchOps& ops) {
  if (spec.q_lora) {
    const MatmulOutput down[] = {{Matrix::q_a, q_lora}, {Matrix::kv_a, latent}};
    ops.matmul(layer, down, normed);
    ops.rms_norm(q_lora, std::nullopt, {layer, Vector::q_a_norm}, 1, spec.shape.q_lora_rank,
                 q_lora);
    const MatmulOutput up[] = {{Matrix::q_b, q}};
    ops.matmul(layer, up, q_lora);
  } else {
    const MatmulOutput projections[] = {{Matrix::wq, q}, {Matrix::kv_a, latent}};
    ops.matmul(layer, projections, normed);
  }
  ops.store_latent_kv(layer, latent);
  ops.latent_attention(layer, q, attention);
}

// A SwiGLU FFN of `normed` into `projected`.
void dense_ffn(std::int32_t layer, BatchOps& ops) {
  const MatmulOutput gate_up[] = {{Matrix::w_gate, gate}, {Matrix::w_up, up}};
  ops.matmul(layer, gate_up, normed);
  ops.silu_mul(gate, up, gate);
  const MatmulOutput down[] = {{Matrix::w_down, projected}};
  ops.matmul(layer, down, gate);
}

// Routed experts, plus the shared experts every token runs, into `projected`.
void mixture_of_experts(const GraphSpec& spec, std::int32_t layer, BatchOps& ops) {
  const MatmulOutput router[] = {{Matrix::router, router_logits}};
  ops.matmul(layer, router, normed);
  ops.route_experts(layer, router_logits);
  ops.expert_ffn(layer, normed, projected);
  if (!spec.shared_experts) return;
  const MatmulOutput gate_up[] = {{Matrix::shared_gate, shared_gate},
                                  {Matrix::shared_up, shared_up}};
  ops.matmul(layer, gate_up, normed);
  ops.silu_mul(shared_gate, shared_up, shared_gate);
  const MatmulOutput down[] = {{Matrix::shared_down, shared_out}};
  ops.matmul(layer, down, shared_gate);
  ops.add(projected, shared_out);
}

}  // namespace

void llama_graph(const GraphSpec& spec, BatchOps& ops) {
  const RankShape& shape = spec.shape;
  ops.embed(x);
  for (std::int32_t layer = 0; layer < spec.n_layers; ++layer) {
    // From the second layer on, the previous FFN's output joins the residual stream here.
    const std::optional<Activation> ffn_out =
        layer == 0 ? std::nullopt : std::optional<Activation>(projected);
    ops.rms_norm(x, ffn_out, {layer, Vector::attn_norm}, 1, shape.hidden, normed);
    if (spec.latent_attention) {
      latent_attention(spec, layer, ops);
    } else {
      grouped_query_attention(spec, layer, ops);
    }
    const MatmulOutput attention_out[] = {{Matrix::wo, projected}};
    ops.matmul(layer, attention_out, attention);
    ops.all_reduce(projected);

    ops.rms_norm(x, projected, {layer, Vector::ffn_norm}, 1, shape.hidden, normed);
    if (spec.is_moe_layer(layer)) {
      mixture_of_experts(spec, layer, ops);
    } else {
      dense_ffn(layer, ops);
    }
    ops.all_reduce(projected);
  }
  ops.add(x, projected);
  ops.gather_logit_rows(x, logit_rows);
  ops.rms_norm(logit_rows, std::nullopt, {0, Vector::output_norm}, 1, shape.hidden, logit_rows);
  const MatmulOutput output[] = {{Matrix::output, logits}};
  ops.matmul(0, output, logit_rows);
}

}  // namespace tern::engine
