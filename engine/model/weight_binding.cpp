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

}  // namespace

std::string tensor_name(std::string_view pattern, int layer, int expert) {
  std::string name(pattern);
  if (const std::size_t at = name.find("{}"); at != std::string::npos) {
    name.replace(at, 2, std::to_string(layer));
  }
  if (const std::size_t at = name.find("{x}"); at != std::string::npos) {
    name.replace(at, 3, std::to_string(expert));
  }
  return name;
}

namespace {

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

  // A 3-D tensor of `count` [rows][cols] matrices, outermost first, as one view per matrix.
  std::optional<std::vector<WeightTensor>> bind_stacked(const std::string& name, std::int64_t count,
                                                        std::int64_t rows, std::int64_t cols) {
    if (error_) return std::nullopt;
    const std::optional<StoredTensor> stored = lookup_(name);
    if (!stored) {
      fail(name, "is missing");
      return std::nullopt;
    }
    const std::vector<std::int64_t> expected{count, rows, cols};
    if (stored->dims != expected) {
      fail(name, fmt::format("has shape [{}] but the configuration needs [{}]",
                             join_dims(stored->dims), join_dims(expected)));
      return std::nullopt;
    }
    StoredTensor first = *stored;
    first.dims = {rows, cols};
    first.bytes = count > 0 ? stored->bytes / static_cast<std::uint64_t>(count) : 0;
    if (first.bytes * static_cast<std::uint64_t>(count) != stored->bytes) {
      fail(name, fmt::format("holds {} bytes, which is not {} matrices of {} x {}", stored->bytes,
                             count, rows, cols));
      return std::nullopt;
    }
    const std::optional<WeightTensor> matrix = check(name, first, Kind::matrix, rows, cols);
    if (!matrix) return std::nullopt;
    std::vector<WeightTensor> out;
    for (std::int64_t i = 0; i < count; ++i) {
      WeightTensor view = *matrix;
      view.data = matrix->data + static_cast<std::size_t>(i) * first.bytes;
      out.push_back(view);
    }
    return out;
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

// Per-expert tensors (HF, "{x}" in the name) or one stacked 3-D tensor (GGUF).
std::vector<WeightTensor> bind_expert_matrices(Binder& binder, std::string_view pattern, int layer,
                                               int n_experts, std::int64_t rows,
                                               std::int64_t cols) {
  if (pattern.find("{x}") == std::string_view::npos) {
    return binder.bind_stacked(tensor_name(pattern, layer), n_experts, rows, cols)
        .value_or(std::vector<WeightTensor>{});
  }
  std::vector<WeightTensor> matrices;
  for (int expert = 0; expert < n_experts; ++expert) {
    const auto matrix =
        binder.bind(tensor_name(pattern, layer, expert), Kind::matrix, rows, cols, true);
    if (!matrix) return {};
    matrices.push_back(*matrix);
  }
  return matrices;
}

ExpertWeights bind_experts(Binder& binder, const ModelConfig& config, const TensorNames& names,
                           int layer) {
  const MoeConfig& moe = config.moe;
  const std::int64_t hidden = config.hidden_size;
  ExpertWeights experts;
  const auto bind = [&](std::string_view pattern, Kind kind, std::int64_t rows, std::int64_t cols,
                        bool required) {
    return binder.bind(tensor_name(pattern, layer), kind, rows, cols, required);
  };
  if (auto router = bind(names.router, Kind::matrix, moe.n_experts, hidden, true)) {
    experts.router = *router;
  }
  if (moe.scoring == MoeConfig::Scoring::sigmoid) {
    experts.selection_bias = bind(names.selection_bias, Kind::vector, 1, moe.n_experts, false);
  }
  experts.gate =
      bind_expert_matrices(binder, names.expert_gate, layer, moe.n_experts, moe.expert_ffn, hidden);
  experts.up =
      bind_expert_matrices(binder, names.expert_up, layer, moe.n_experts, moe.expert_ffn, hidden);
  experts.down =
      bind_expert_matrices(binder, names.expert_down, layer, moe.n_experts, hidden, moe.expert_ffn);
  if (moe.shared_expert_ffn > 0) {
    experts.shared_gate =
        bind(names.shared_gate, Kind::matrix, moe.shared_expert_ffn, hidden, true);
    experts.shared_up = bind(names.shared_up, Kind::matrix, moe.shared_expert_ffn, hidden, true);
    experts.shared_down =
        bind(names.shared_down, Kind::matrix, hidden, moe.shared_expert_ffn, true);
  }
  return experts;
}

LatentAttentionWeights bind_latent_attention(Binder& binder, const ModelConfig& config,
                                             const TensorNames& names, int layer) {
  const LatentAttentionConfig& latent = config.latent;
  const std::int64_t hidden = config.hidden_size;
  const std::int64_t heads = config.n_heads;
  LatentAttentionWeights out;
  const auto bind = [&](std::string_view pattern, Kind kind, std::int64_t rows, std::int64_t cols,
                        bool required) {
    return binder.bind(tensor_name(pattern, layer), kind, rows, cols, required);
  };
  if (latent.q_lora_rank > 0) {
    out.q_a = bind(names.q_a, Kind::matrix, latent.q_lora_rank, hidden, true);
    out.q_a_norm = bind(names.q_a_norm, Kind::vector, 1, latent.q_lora_rank, true);
    out.q_b = bind(names.q_b, Kind::matrix, heads * config.head_dim, latent.q_lora_rank, true);
  }
  if (auto kv_a = bind(names.kv_a, Kind::matrix, latent.cached_width(), hidden, true)) {
    out.kv_a = *kv_a;
  }
  if (auto norm = bind(names.kv_a_norm, Kind::vector, 1, latent.kv_lora_rank, true)) {
    out.kv_a_norm = *norm;
  }
  const std::int64_t per_head = latent.nope_head_dim + latent.value_head_dim;
  out.kv_b =
      bind(names.kv_b, Kind::matrix, heads * per_head, latent.kv_lora_rank, names.k_b.empty());
  if (out.kv_b) {
    for (std::int64_t head = 0; head < heads; ++head) {
      WeightTensor view = *out.kv_b;
      view.rows = latent.value_head_dim;
      view.data +=
          static_cast<std::size_t>(head * per_head + latent.nope_head_dim) * out.kv_b->row_bytes;
      out.v_b.push_back(view);
    }
  } else if (!binder.error()) {
    out.k_b = bind_expert_matrices(binder, names.k_b, layer, static_cast<int>(heads),
                                   latent.kv_lora_rank, latent.nope_head_dim);
    out.v_b = bind_expert_matrices(binder, names.v_b, layer, static_cast<int>(heads),
                                   latent.value_head_dim, latent.kv_lora_rank);
  }
  return out;
}

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
      return binder.bind(tensor_name(pattern, layer), kind, rows, cols, required);
    };
    LayerWeights weights;
    const auto required = [&](std::string_view pattern, Kind kind, std::int64_t rows,
                              std::int64_t cols, WeightTensor& into) {
      if (const auto tensor = bind(pattern, kind, rows, cols, true)) into = *tensor;
    };
    required(names.attn_norm, Kind::vector, 1, hidden, weights.attn_norm);
    if (config.latent.enabled()) {
      weights.latent = bind_latent_attention(binder, config, names, layer);
      if (!config.latent.q_lora_rank) required(names.wq, Kind::matrix, q_rows, hidden, weights.wq);
      required(names.wo, Kind::matrix, hidden,
               std::int64_t{config.n_heads} * config.latent.value_head_dim, weights.wo);
    } else {
      required(names.wq, Kind::matrix, q_rows, hidden, weights.wq);
      required(names.wk, Kind::matrix, kv_rows, hidden, weights.wk);
      required(names.wv, Kind::matrix, kv_rows, hidden, weights.wv);
      required(names.wo, Kind::matrix, hidden, q_rows, weights.wo);
    }
    required(names.ffn_norm, Kind::vector, 1, hidden, weights.ffn_norm);
    if (config.moe.is_moe_layer(layer)) {
      weights.experts = bind_experts(binder, config, names, layer);
    } else {
      required(names.w_gate, Kind::matrix, ffn, hidden, weights.w_gate);
      required(names.w_up, Kind::matrix, ffn, hidden, weights.w_up);
      required(names.w_down, Kind::matrix, hidden, ffn, weights.w_down);
    }
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
