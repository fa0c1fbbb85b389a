#include "engine/backend/tensor_parallel_shape.h"

#include <vector>

#include <fmt/format.h>

namespace tern::engine {
namespace {

using kernels::TensorType;

// A rank's columns of a row-parallel matrix start at rank * width and must start and end on a
// block boundary: the slice of each row is then whole blocks, a byte range the kernels read as
// a row of their own. Integer formats also quantize their input in blocks of 32 (Q8_1), which
// every such format's block is a multiple of.
Status check_row_parallel(std::string_view source, std::size_t layer, std::string_view name,
                          TensorType type, std::int64_t cols, std::int64_t width, int ranks) {
  const std::int64_t block = kernels::tensor_type_traits(type).block_elements;
  if (block <= 1 || width % block == 0) return Status::success();
  return Error{fmt::format(
      "{}: layer {} {} is {}: over {} devices each holds {} of its {} input columns, which is "
      "not a whole number of its blocks of {} (tensor parallelism splits row-parallel matrices "
      "on block boundaries)",
      source, layer, name, kernels::tensor_type_name(type), ranks, width, cols, block)};
}

}  // namespace

Expected<RankShape> rank_shape(const ModelConfig& config, std::string_view source,
                               std::span<const RowParallelFormats> layers, RankSlice slice) {
  const int n = slice.ranks;
  if (n < 1) {
    return Error{fmt::format("{}: tensor parallelism needs at least 1 device, got {}", source, n)};
  }
  if (config.n_heads < 1 || config.n_kv_heads < 1) {  // validate_config's, but never divide by 0
    return Error{fmt::format("{}: {} query heads and {} KV heads cannot be split", source,
                             config.n_heads, config.n_kv_heads)};
  }
  if (slice.rank < 0 || slice.rank >= n) {
    return Error{fmt::format("{}: rank {} is not one of the {} tensor-parallel ranks", source,
                             slice.rank, n)};
  }
  if (n > 1 && (config.moe.enabled() || config.latent.enabled())) {
    return Error{
        fmt::format("{}: tensor parallelism over {} is not supported; serve this {} model with "
                    "tensor_parallel 1",
                    source, config.moe.enabled() ? "mixture-of-experts layers" : "latent attention",
                    config.architecture)};
  }
  if (config.n_heads % n != 0) {
    return Error{fmt::format(
        "{}: {} query heads do not split over {} devices (tensor parallelism needs n_heads % "
        "devices == 0; {} % {} = {})",
        source, config.n_heads, n, config.n_heads, n, config.n_heads % n)};
  }
  if (config.n_kv_heads % n != 0 && n % config.n_kv_heads != 0) {
    return Error{fmt::format(
        "{}: {} KV heads do not split over {} devices (tensor parallelism needs kv_heads % "
        "devices == 0 to split them, or devices % kv_heads == 0 to replicate each on "
        "devices / kv_heads devices)",
        source, config.n_kv_heads, n)};
  }
  if (config.ffn_hidden_size % n != 0) {
    return Error{fmt::format(
        "{}: the FFN width {} does not split over {} devices (tensor parallelism needs ffn % "
        "devices == 0; {} % {} = {})",
        source, config.ffn_hidden_size, n, config.ffn_hidden_size, n, config.ffn_hidden_size % n)};
  }
  if (config.vocab_size % n != 0) {
    return Error{fmt::format(
        "{}: the vocabulary of {} does not split over {} devices (tensor parallelism needs vocab "
        "% devices == 0; {} % {} = {})",
        source, config.vocab_size, n, config.vocab_size, n, config.vocab_size % n)};
  }
  const std::int64_t q_width = std::int64_t{config.n_heads} * config.head_dim;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (Status ok =
            check_row_parallel(source, i, "attn_output", layers[i].wo, q_width, q_width / n, n);
        !ok.ok()) {
      return ok.error();
    }
    if (Status ok = check_row_parallel(source, i, "ffn_down", layers[i].w_down,
                                       config.ffn_hidden_size, config.ffn_hidden_size / n, n);
        !ok.ok()) {
      return ok.error();
    }
  }
  RankShape shape = RankShape::whole(config);
  shape.n_heads = config.n_heads / n;
  shape.n_kv_heads = static_cast<std::int32_t>(held_kv_heads(config, slice).count);
  shape.ffn = config.ffn_hidden_size / n;
  shape.vocab = config.vocab_size / n;
  return shape;
}

Expected<RankShape> rank_shape(const ModelWeights& weights, RankSlice slice) {
  std::vector<RowParallelFormats> formats;
  formats.reserve(weights.layers().size());
  for (const LayerWeights& layer : weights.layers()) {
    formats.push_back({layer.wo.type, layer.w_down.type});
  }
  return rank_shape(weights.config(), weights.path(), formats, slice);
}

IndexRange held_query_heads(const ModelConfig& config, RankSlice slice) {
  const std::int64_t per_rank = config.n_heads / slice.ranks;
  return {slice.rank * per_rank, per_rank};
}

IndexRange held_kv_heads(const ModelConfig& config, RankSlice slice) {
  if (config.n_kv_heads % slice.ranks == 0) {
    const std::int64_t per_rank = config.n_kv_heads / slice.ranks;
    return {slice.rank * per_rank, per_rank};
  }
  // More ranks than KV heads: ranks / n_kv_heads neighbouring ranks share one, as their query
  // heads all belong to its group.
  return {slice.rank / (slice.ranks / config.n_kv_heads), 1};
}

IndexRange held_ffn(const ModelConfig& config, RankSlice slice) {
  const std::int64_t per_rank = config.ffn_hidden_size / slice.ranks;
  return {slice.rank * per_rank, per_rank};
}

IndexRange held_vocab(const ModelConfig& config, RankSlice slice) {
  const std::int64_t per_rank = config.vocab_size / slice.ranks;
  return {slice.rank * per_rank, per_rank};
}

MatrixSlice held_matrix(const ModelConfig& config, RankSlice slice, Matrix matrix) {
  const std::int64_t hidden = config.hidden_size;
  const auto heads_to_values = [&](IndexRange heads) {
    return IndexRange{heads.begin * config.head_dim, heads.count * config.head_dim};
  };
  const IndexRange all_hidden{0, hidden};
  switch (matrix) {
    case Matrix::wq:
      return {heads_to_values(held_query_heads(config, slice)), all_hidden};
    case Matrix::wk:
    case Matrix::wv:
      return {heads_to_values(held_kv_heads(config, slice)), all_hidden};
    case Matrix::wo:
      return {all_hidden, heads_to_values(held_query_heads(config, slice))};
    case Matrix::w_gate:
    case Matrix::w_up:
      return {held_ffn(config, slice), all_hidden};
    case Matrix::w_down:
      return {all_hidden, held_ffn(config, slice)};
    case Matrix::router:  // rank_shape refuses experts and latent attention over several ranks
    case Matrix::shared_gate:
    case Matrix::shared_up:
    case Matrix::shared_down:
    case Matrix::q_a:
    case Matrix::q_b:
    case Matrix::kv_a:
      return {IndexRange{0, 0}, all_hidden};
    case Matrix::output:
      break;
  }
  return {held_vocab(config, slice), all_hidden};
}

IndexRange held_vector(const ModelConfig& config, RankSlice slice, Vector vector,
                       std::int64_t length) {
  switch (vector) {
    case Vector::bq:
      return held_matrix(config, slice, Matrix::wq).rows;
    case Vector::bk:
    case Vector::bv:
      return held_matrix(config, slice, Matrix::wk).rows;
    case Vector::attn_norm:
    case Vector::ffn_norm:
    case Vector::q_norm:
    case Vector::k_norm:
    case Vector::q_a_norm:
    case Vector::output_norm:
      break;
  }
  return {0, length};
}

}  // namespace tern::engine
