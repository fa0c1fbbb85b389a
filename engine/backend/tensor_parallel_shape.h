#pragma once

// What each rank holds when one model is split over `ranks` devices (tensor parallelism, as
// vLLM splits it). Column-parallel matrices keep a contiguous range of their output rows: wq
// (the rank's query heads), wk and wv (its KV heads), w_gate and w_up (its FFN rows) and the LM
// head (its vocabulary rows). Row-parallel matrices keep a contiguous range of their input
// columns, and all_reduce sums the ranks' partial outputs: wo (the columns of the rank's query
// heads) and w_down (its FFN columns). Embedding, norms and RoPE tables are whole on every rank.

#include <cstdint>
#include <span>
#include <string_view>

#include "engine/backend/batch_ops.h"
#include "engine/expected.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/model/rank_shape.h"
#include "kernels/tensor_type.h"

namespace tern::engine {

// Which of `ranks` devices this is; the default is the whole model on one device.
struct RankSlice {
  int rank = 0;
  int ranks = 1;

  // A row-parallel bias is added once to the sum, so only one rank adds it.
  bool adds_row_parallel_bias() const { return rank == 0; }
};

// [begin, begin + count) of rows, columns or heads.
struct IndexRange {
  std::int64_t begin = 0;
  std::int64_t count = 0;

  std::int64_t end() const { return begin + count; }
  friend bool operator==(const IndexRange&, const IndexRange&) = default;
};

// The part of a stored [rows][cols] matrix a rank holds, in elements.
struct MatrixSlice {
  IndexRange rows;
  IndexRange cols;
};

// The formats of a layer's row-parallel matrices: a rank's column range must be whole blocks.
struct RowParallelFormats {
  kernels::TensorType wo = kernels::TensorType::f32;
  kernels::TensorType w_down = kernels::TensorType::f32;
};

// The rank's sizes, or an error naming `source` (the model path) and the numbers when the model
// does not split over slice.ranks devices: query heads, KV heads (split, or each replicated on
// ranks / kv_heads ranks), FFN width and vocabulary must divide evenly, and each rank's columns
// of wo and w_down must be whole blocks of their format (32 for Q8_0/Q4_0, 256 for Q4_K/Q6_K).
// Whether there are that many devices is the backend's check.
Expected<RankShape> rank_shape(const ModelConfig& config, std::string_view source,
                               std::span<const RowParallelFormats> layers, RankSlice slice);
Expected<RankShape> rank_shape(const ModelWeights& weights, RankSlice slice);

// Which heads, FFN rows and vocabulary rows a rank holds; valid for a slice rank_shape accepts.
// Query heads are always n_heads / ranks per rank. KV heads are n_kv_heads / ranks per rank, or,
// with more ranks than KV heads, one head that rank r shares with its neighbours:
// r / (ranks / n_kv_heads). Either way local query head h reads local KV head
// h / (n_heads / n_kv_heads), the model's own grouping.
IndexRange held_query_heads(const ModelConfig& config, RankSlice slice);
IndexRange held_kv_heads(const ModelConfig& config, RankSlice slice);
IndexRange held_ffn(const ModelConfig& config, RankSlice slice);
IndexRange held_vocab(const ModelConfig& config, RankSlice slice);

// The rows and columns of `matrix` ([out][in] as stored) the rank holds.
MatrixSlice held_matrix(const ModelConfig& config, RankSlice slice, Matrix matrix);
// The values of a layer vector the rank holds: bq like wq's rows, bk and bv like wk's; the norms
// whole.
IndexRange held_vector(const ModelConfig& config, RankSlice slice, Vector vector,
                       std::int64_t length);

}  // namespace tern::engine
