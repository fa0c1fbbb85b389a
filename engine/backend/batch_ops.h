#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace tern::engine {

// Activations a model graph names. A backend keeps one buffer of each, row-major with one row
// per token of the batch ([tokens][width]), except logit_rows and logits, which have one row per
// chunk that wants logits. Widths come from the rank's shape (RankShape): x, normed, projected
// and logit_rows are hidden wide; q and attention n_heads * head_dim; k and v
// n_kv_heads * head_dim; gate and up ffn; logits the rank's vocabulary slice.
enum class Activation { x, normed, q, k, v, attention, projected, gate, up, logit_rows, logits };

// A layer's weights as the graph names them; the backend maps (layer, name) to the form it
// prepared them in (repacked tiles on the CPU, device memory on a GPU).
enum class Matrix { wq, wk, wv, wo, w_gate, w_up, w_down, output };
enum class Vector { attn_norm, ffn_norm, bq, bk, bv, q_norm, k_norm, output_norm };

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
};

}  // namespace tern::engine
