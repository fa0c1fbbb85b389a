#include "engine/model/llama_graph.h"

namespace tern::engine {

void llama_graph(const GraphSpec& spec, BatchOps& ops) {
  using enum Activation;
  const RankShape& shape = spec.shape;
  ops.embed(x);
  for (std::int32_t layer = 0; layer < spec.n_layers; ++layer) {
    // From the second layer on, the previous FFN's output joins the residual stream here.
    const std::optional<Activation> ffn_out =
        layer == 0 ? std::nullopt : std::optional<Activation>(projected);
    ops.rms_norm(x, ffn_out, {layer, Vector::attn_norm}, 1, shape.hidden, normed);
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
    const MatmulOutput attention_out[] = {{Matrix::wo, projected}};
    ops.matmul(layer, attention_out, attention);
    ops.all_reduce(projected);

    ops.rms_norm(x, projected, {layer, Vector::ffn_norm}, 1, shape.hidden, normed);
    const MatmulOutput gate_up[] = {{Matrix::w_gate, gate}, {Matrix::w_up, up}};
    ops.matmul(layer, gate_up, normed);
    ops.silu_mul(gate, up, gate);
    const MatmulOutput down[] = {{Matrix::w_down, projected}};
    ops.matmul(layer, down, gate);
    ops.all_reduce(projected);
  }
  ops.add(x, projected);
  ops.gather_logit_rows(x, logit_rows);
  ops.rms_norm(logit_rows, std::nullopt, {0, Vector::output_norm}, 1, shape.hidden, logit_rows);
  const MatmulOutput output[] = {{Matrix::output, logits}};
  ops.matmul(0, output, logit_rows);
}

}  // namespace tern::engine
