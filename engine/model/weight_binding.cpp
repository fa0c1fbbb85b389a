#include "engine/model/weight_binding.h"

#include <fmt/format.h>

#include <array>

namespace tern::engine {
namespace {

using kernels::TensorType;

// What the kernels compute with; everything else is refused at load, not at the first step.
constexpr std::array<TensorType, 7> kMatrixTypes{
    TensorType::f32,  TensorType::f16,  TensorType::bf16, TensorType::q8_0,
    TensorType::q4_0, TensorType::q4_k, TensorType::q6_k};
constexpr std::array<TensorType, 3> kVectorTypes{TensorType::f32, TensorType::f16,
                                                 TensorType::bf16};

enum class Kind { matrix, vector };

template <std::size_t N>
bool contains(const std::array<TensorType, N>& types, TensorType type) {
  for (TensorType allowed : types) {
    if (allowed == type) return true;
  }
  return false;
}

template <std::size_t N>
std::string type_list(const std::array<TensorType, N>& types) {
  std::string out;
  for (TensorType type : types) {
    if (!out.empty()) out += ", ";
    out += kernels::tensor_type_name(type);
  }
  return out;
}

std::string layer_name(std::string_view pattern, int layer) {
  std::string name(pattern);
  if (const std::size_t at = name.find("{}"); at != std::string::npos) {
    name.replace(at, 2, std::to_string(layer));
  }
  return name;
}

std::string join_dims(const std::vector<std::int64_t>& dims) {
  std::string out;
  for (std::int64_t dim : dims) {
    if (!out.empty()) out += ", ";
    out += std::to_string(dim);
  }
  return out;
}

class Binder {
 public:
  Binder(const TensorLookup& lookup, const std::string& source)
      : lookup_(lookup), source_(source) {}

  std::optional<WeightTensor> bind(const std::string& name, Kind kind, std::int64_t rows,
                                   std::int64_t cols, bool required) {
    if (error_) return std::nullopt;
    const std::optional<StoredTensor> stored = lookup_(name);
    if (!stored) {
      if (required) fail(name, "is missing");
      return std::nullopt;
    }
    return check(name, *stored, kind, rows, cols);
  }

  std::optional<WeightTensor> check(const std::string& name, const StoredTensor& stored, Kind kind,
                                    std::int64_t rows, std::int64_t cols) {
    const std::vector<std::int64_t> expected = kind == Kind::vector
                                                   ? std::vector<std::int64_t>{cols}
                                                   : std::vector<std::int64_t>{rows, cols};
    if (stored.dims != expected) {
      fail(name, fmt::format("has shape [{}] but the configuration needs [{}]",
                             join_dims(stored.dims), join_dims(expected)));
      return std::nullopt;
    }
    const bool supported =
        stored.type && (kind == Kind::matrix ? contains(kMatrixTypes, *stored.type)
                                             : contains(kVectorTypes, *stored.type));
    if (!supported) {
      fail(name,
           fmt::format("type {} is not supported here (supported: {})", stored.type_name,
                       kind == Kind::matrix ? type_list(kMatrixTypes) : type_list(kVectorTypes)));
      return std::nullopt;
    }
    const std::optional<std::uint64_t> row_bytes =
        kernels::tensor_bytes(*stored.type, static_cast<std::uint64_t>(cols));
    const std::uint64_t row_count = kind == Kind::vector ? 1 : static_cast<std::uint64_t>(rows);
    if (!row_bytes || *row_bytes * row_count != stored.bytes) {
      fail(name, fmt::format("holds {} bytes, which is not {} rows of {} {} values", stored.bytes,
                             row_count, cols, stored.type_name));
      return std::nullopt;
    }
    return WeightTensor{*stored.type, kind == Kind::vector ? 1 : rows, cols,
                        static_cast<std::size_t>(*row_bytes), stored.data};
  }

  void fail(const std::string& name, std::string_view reason) {
    if (!error_) error_ = Error{fmt::format("{}: tensor '{}' {}", source_, name, reason)};
  }
  const std::optional<Error>& error() const { return error_; }

 private:
  const TensorLookup& lookup_;
  const std::string& source_;
  std::optional<Error> error_;
};

}  // namespace

Expected<BoundWeights> bind_weights(const ModelConfig& config, const TensorNames& names,
                                    const TensorLookup& lookup, const std::string& source) {
  Binder binder(lookup, source);
  BoundWeights out;
  const std::int64_t hidden = config.hidden_size;
  const std::int64_t vocab = config.vocab_size;
  const std::int64_t q_rows = std::int64_t{config.n_heads} * config.head_dim;
  const std::int64_t kv_rows = std::int64_t{config.n_kv_heads} * config.head_dim;
  const std::int64_t ffn = config.ffn_hidden_size;

  // Embedding and output: either may stand in for the other when only one is stored.
  const std::string embedding_name(names.token_embedding);
  const std::string output_name(names.output);
  std::optional<WeightTensor> embedding =
      binder.bind(embedding_name, Kind::matrix, vocab, hidden, false);
  std::optional<WeightTensor> output;
  if (!config.tied_embeddings || !embedding) {
    output = binder.bind(output_name, Kind::matrix, vocab, hidden, false);
  }
  if (binder.error()) return *binder.error();
  if (!embedding && !output) {
    return Error{fmt::format("{}: tensor '{}' is missing", source, embedding_name)};
  }
  out.tied = !embedding || !output;
  out.token_embedding = embedding ? *embedding : *output;
  out.output = output ? *output : *embedding;
  if (const auto norm =
          binder.bind(std::string(names.output_norm), Kind::vector, 1, hidden, true)) {
    out.output_norm = *norm;
  }

  // No reserve: n_layers comes from the file, and a corrupt count must not size an allocation;
  // the loop stops at the first layer whose tensors are missing.
  for (int layer = 0; layer < config.n_layers && !binder.error(); ++layer) {
    const auto bind = [&](std::string_view pattern, Kind kind, std::int64_t rows, std::int64_t cols,
                          bool required) {
      return binder.bind(layer_name(pattern, layer), kind, rows, cols, required);
    };
    LayerWeights weights;
    const auto required = [&](std::string_view pattern, Kind kind, std::int64_t rows,
                              std::int64_t cols, WeightTensor& into) {
      if (const auto tensor = bind(pattern, kind, rows, cols, true)) into = *tensor;
    };
    required(names.attn_norm, Kind::vector, 1, hidden, weights.attn_norm);
    required(names.wq, Kind::matrix, q_rows, hidden, weights.wq);
    required(names.wk, Kind::matrix, kv_rows, hidden, weights.wk);
    required(names.wv, Kind::matrix, kv_rows, hidden, weights.wv);
    required(names.wo, Kind::matrix, hidden, q_rows, weights.wo);
    required(names.ffn_norm, Kind::vector, 1, hidden, weights.ffn_norm);
    required(names.w_gate, Kind::matrix, ffn, hidden, weights.w_gate);
    required(names.w_up, Kind::matrix, ffn, hidden, weights.w_up);
    required(names.w_down, Kind::matrix, hidden, ffn, weights.w_down);
    if (config.qkv_bias) {
      weights.bq = bind(names.bq, Kind::vector, 1, q_rows, true);
      weights.bk = bind(names.bk, Kind::vector, 1, kv_rows, true);
      weights.bv = bind(names.bv, Kind::vector, 1, kv_rows, true);
    }
    if (config.qk_norm) {
      weights.q_norm = bind(names.q_norm, Kind::vector, 1, config.head_dim, true);
      weights.k_norm = bind(names.k_norm, Kind::vector, 1, config.head_dim, true);
    }
    out.layers.push_back(std::move(weights));
  }
  if (binder.error()) return *binder.error();
  return out;
}

}  // namespace tern::engine
