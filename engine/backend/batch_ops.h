#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace tern::engine {

// Activations a model graph names. A backend keeps one buffer of each, row-major with one row
// per token of the batch ([tokens][width]), except logit_rows and logits, which have one row per
// chunk that wants logits. Widths come from the rank's shape (RankShape): x, normed, projected,
// shared_out and logit_rows are hidden wide; q n_heads * head_dim; attention n_heads *
// value_head_dim; k and v n_kv_heads * head_dim; gate and up ffn; logits the rank's vocabulary
// slice. Mixture of experts: router_logits n_experts; shared_gate and shared_up
// shared_expert_ffn. Latent attention: q_lora q_lora_rank; latent kv_lora_rank + rope_head_dim.
enum class Activation {
  x,
  normed,
  q,
  k,
  v,
  attention,
  projected,
  gate,
  up,
  logit_rows,
  logits,
  router_logits,
  shared_gate,
  shared_up,
  shared_out,
  q_lora,
  latent
};

// A layer's weights as the graph names them; the backend maps (layer, name) to the form it
// prepared them in (repacked tiles on the CPU, device memory on a GPU).
enum class Matrix {
  wq,
  wk,
  wv,
  wo,
  w_gate,
  w_up,
  w_down,
  output,
  router,
  shared_gate,
  shared_up,
  shared_down,
  q_a,
  q_b,
  kv_a
};
enum class Vector { attn_norm, ffn_norm, bq, bk, bv, q_norm, k_norm, output_norm, q_a_norm };

// `output` and `output_norm` belong to no layer: their layer is ignored.
struct MatrixRef {
  std::int32_t layer = 0;
  Matrix name = Matrix::wq;
};
struct VectorRef {
  std::int32_t layer = 0;
  Vector name = Vector::attn_norm;
};

struct MatmulOutput {
  Matrix weight;
  Activation out;
};

// The operations every backend implements, each over the whole ragged batch of the plan that
// the current forward pass runs: one call per layer per operation, never one per sequence or
// per head, so a GPU backend launches one kernel (or a CUDA graph node) for each. A backend may
// still split the work inside a call as it likes. The calls come in graph order; a backend may
// run them asynchronously as long as their results appear in that order.
class BatchOps {
 public:
  virtual ~BatchOps() = default;

  // out = the token embeddings of the batch's token ids.
  virtual void embed(Activation out) = 0;

  // For each row of `width` values in `in` (rows_per_token rows per token: one for the residual
  // stream, a head count for per-head norms), out = rms_norm(row) * weight. With `residual`,
  // in += residual first (in place), and the norm is taken of that sum.
  virtual void rms_norm(Activation in, std::optional<Activation> residual, VectorRef weight,
                        std::int32_t rows_per_token, std::int32_t width, Activation out) = 0;

  // Every output of the group is its weight times the same input rows: one job, one pass over
  // the input (Q/K/V, gate/up).
  virtual void matmul(std::int32_t layer, std::span<const MatmulOutput> group, Activation in) = 0;

  // rows += bias, on every row.
  virtual void add_bias(VectorRef bias, Activation rows) = 0;

  // Rotary embedding at each token's position, over `heads` heads of each row.
  virtual void rope(Activation rows, std::int32_t heads) = 0;

  // Writes the batch's K and V rows into the layer's paged KV cache at their positions.
  virtual void store_kv(std::int32_t layer, Activation k, Activation v) = 0;

  // Causal attention of every chunk's queries over its sequence's cached keys and values.
  virtual void paged_attention(std::int32_t layer, Activation q, Activation out) = 0;

  // into += from, element by element.
  virtual void add(Activation into, Activation from) = 0;

  // out = silu(gate) * up.
  virtual void silu_mul(Activation gate, Activation up, Activation out) = 0;

  // to = the rows of `from` at the last token of each chunk that wants logits, in plan order.
  virtual void gather_logit_rows(Activation from, Activation to) = 0;

  // Sums a partial result across the ranks of a tensor-parallel group; nothing with one device.
  virtual void all_reduce(Activation rows) = 0;

  // Mixture of experts. The router: each token's experts_per_token experts and their weights from
  // its router logits (the layer's scoring, group limits and selection bias), kept for the next
  // expert_ffn.
  virtual void route_experts(std::int32_t layer, Activation logits) = 0;
  // out = the sum over each token's routed experts, in the router's order, of weight *
  // down(silu(gate(in)) * up(in)). Every expert's weights are read once for all the tokens routed
  // to it, and each token's rows come out as they would alone (batch invariance).
  virtual void expert_ffn(std::int32_t layer, Activation in, Activation out) = 0;

  // Latent attention. Normalises the latent part of each `latent` row (kv_a_norm), rotates its
  // rope key, and writes both into the layer's cache: one row of kv_lora_rank + rope_head_dim
  // values per token, shared by every head.
  virtual void store_latent_kv(std::int32_t layer, Activation latent) = 0;
  // Rotates the rope part of each query head, then attends in the absorbed form (the query's
  // nope part projected into the latent space, values read from the cached latent) and projects
  // each head's result up to value_head_dim values: out is n_heads * value_head_dim wide.
  virtual void latent_attention(std::int32_t layer, Activation q, Activation out) = 0;
};

}  // namespace tern::engine
