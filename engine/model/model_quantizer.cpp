#include "engine/model/model_quantizer.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/model/gguf_metadata_from_hf.h"
#include "engine/model/gguf_writer.h"
#include "engine/model/model_weights.h"
#include "engine/model/weight_binding.h"
#include "kernels/cpu/quant.h"

namespace tern::engine {
namespace {

using kernels::TensorType;

// The requested type if the row length allows it, else the nearest type that fits.
TensorType type_for_row(TensorType requested, std::int64_t cols) {
  const TensorType chain_k4[] = {TensorType::q4_k, TensorType::q4_0, TensorType::q8_0,
                                 TensorType::f16};
  const TensorType chain_k6[] = {TensorType::q6_k, TensorType::q8_0, TensorType::f16};
  const TensorType chain_q4[] = {TensorType::q4_0, TensorType::q8_0, TensorType::f16};
  const TensorType chain_q8[] = {TensorType::q8_0, TensorType::f16};
  std::span<const TensorType> chain;
  switch (requested) {
    case TensorType::q4_k:
      chain = chain_k4;
      break;
    case TensorType::q6_k:
      chain = chain_k6;
      break;
    case TensorType::q4_0:
      chain = chain_q4;
      break;
    case TensorType::q8_0:
      chain = chain_q8;
      break;
    default:
      return requested;
  }
  for (TensorType candidate : chain) {
    if (cols % kernels::tensor_type_traits(candidate).block_elements == 0) return candidate;
  }
  return TensorType::f16;
}

// Row r of a written matrix comes from row source_row(r) of the loaded one.
using RowMap = std::function<std::int64_t(std::int64_t)>;

struct Converter {
  GgufWriter& writer;
  QuantizeReport& report;
  TensorType requested;

  // A matrix in the requested type (or the nearest that fits its rows); absent tensors of a
  // layer that has none (an MoE layer's dense FFN, latent attention's wk/wv) are skipped.
  Status matrix(const std::string& name, const WeightTensor& tensor, RowMap source_row = {}) {
    if (tensor.data == nullptr) return Status::success();
    return add(name, {&tensor, 1}, type_for_row(requested, tensor.cols), {tensor.cols, tensor.rows},
               std::move(source_row));
  }
  // Kept F32 whatever the requested type: norms, biases and the expert router, whose scores
  // decide which experts run.
  Status f32_matrix(const std::string& name, const WeightTensor& tensor) {
    if (tensor.data == nullptr) return Status::success();
    return add(name, {&tensor, 1}, TensorType::f32, {tensor.cols, tensor.rows}, {});
  }
  Status vector(const std::string& name, const WeightTensor& tensor) {
    if (tensor.data == nullptr) return Status::success();
    return add(name, {&tensor, 1}, TensorType::f32, {tensor.cols * tensor.rows}, {});
  }
  // Equally shaped matrices (experts, or the heads of DeepSeek's split kv_b) as one 3-D tensor,
  // outermost first, as llama.cpp stores them; each row quantized like a 2-D matrix's.
  Status stacked(const std::string& name, std::span<const WeightTensor> matrices) {
    if (matrices.empty()) return Status::success();
    const WeightTensor& first = matrices.front();
    for (const WeightTensor& m : matrices) {
      if (m.data == nullptr || m.rows != first.rows || m.cols != first.cols) {
        return Error{fmt::format("tensor '{}': its matrices are missing or differ in shape", name)};
      }
    }
    return add(name, matrices, type_for_row(requested, first.cols),
               {first.cols, first.rows, static_cast<std::int64_t>(matrices.size())}, {});
  }

 private:
  // Writes `parts` one after another, every row converted to `type`.
  Status add(const std::string& name, std::span<const WeightTensor> parts, TensorType type,
             std::vector<std::int64_t> shape, RowMap source_row) {
    ++report.tensors_by_type[std::string(kernels::tensor_type_name(type))];
    const std::int64_t cols = parts.front().cols;
    const auto out_row_bytes = *kernels::tensor_bytes(type, static_cast<std::uint64_t>(cols));
    for (const WeightTensor& part : parts) {
      report.input_bytes += static_cast<std::uint64_t>(part.rows) * part.row_bytes;
      report.output_bytes += out_row_bytes * static_cast<std::uint64_t>(part.rows);
    }
    return writer.add_tensor(
        name, type, std::move(shape),
        [parts = std::vector<WeightTensor>(parts.begin(), parts.end()), cols, type, out_row_bytes,
         source_row](std::span<std::byte> out) -> Status {
          std::vector<float> row(static_cast<std::size_t>(cols));
          std::byte* to = out.data();
          for (const WeightTensor& tensor : parts) {
            for (std::int64_t r = 0; r < tensor.rows; ++r, to += out_row_bytes) {
              const std::int64_t from = source_row ? source_row(r) : r;
              kernels::dequantize_row(
                  tensor.type, tensor.data + static_cast<std::size_t>(from) * tensor.row_bytes,
                  row.data(), cols);
              if (!kernels::quantize_row(type, row.data(), to, cols)) {
                return Error{fmt::format("cannot quantize to {}", kernels::tensor_type_name(type))};
              }
            }
          }
          return Status::success();
        });
  }
};

// GGUF stores rotated pairs adjacent (interleaved): within each block of `block` rows, rows
// [offset, offset + rope) are the rotated ones, and row offset + 2i holds the input's row
// offset + i, row offset + 2i + 1 its row offset + i + rope/2 (rotate-half order).
RowMap interleave_rows(std::int64_t block, std::int64_t offset, std::int64_t rope) {
  return [block, offset, rope](std::int64_t row) {
    const std::int64_t base = row / block * block, j = row % block - offset;
    if (j < 0 || j >= rope) return row;
    return base + offset + (j % 2 == 0 ? j / 2 : j / 2 + rope / 2);
  };
}

// The attention tensors of a layer. Ordinary attention from HF `llama` (Mixtral included) and
// latent attention whose config says rotate-half get their rotated rows interleaved, which is
// the only layout GGUF `llama` and `deepseek2` have.
Status add_attention(Converter& convert, int l, const LayerWeights& layer,
                     const ModelConfig& config, bool from_hf) {
  const TensorNames& names = gguf_tensor_names();
  const auto name = [l](std::string_view pattern) { return tensor_name(pattern, l); };
  const bool permute = from_hf && config.rope_layout == RopeLayout::neox &&
                       (config.architecture == "llama" || config.architecture == "deepseek2");
  Status status = convert.vector(name(names.attn_norm), layer.attn_norm);
  if (!layer.latent) {
    const RowMap qk = permute ? interleave_rows(config.head_dim, 0, config.head_dim) : RowMap{};
    for (auto [pattern, tensor, map] :
         {std::tuple{names.wq, &layer.wq, qk}, std::tuple{names.wk, &layer.wk, qk},
          std::tuple{names.wv, &layer.wv, RowMap{}}}) {
      if (status.ok()) status = convert.matrix(name(pattern), *tensor, map);
    }
  } else {
    const LatentAttentionConfig& latent = config.latent;
    const LatentAttentionWeights& weights = *layer.latent;
    const RowMap q =
        permute ? interleave_rows(config.head_dim, latent.nope_head_dim, latent.rope_head_dim)
                : RowMap{};
    const RowMap kv_a =
        permute ? interleave_rows(latent.cached_width(), latent.kv_lora_rank, latent.rope_head_dim)
                : RowMap{};
    if (status.ok()) status = convert.matrix(name(names.wq), layer.wq, q);
    if (weights.q_a && status.ok()) status = convert.matrix(name(names.q_a), *weights.q_a);
    if (weights.q_a_norm && status.ok()) {
      status = convert.vector(name(names.q_a_norm), *weights.q_a_norm);
    }
    if (weights.q_b && status.ok()) status = convert.matrix(name(names.q_b), *weights.q_b, q);
    if (status.ok()) status = convert.matrix(name(names.kv_a), weights.kv_a, kv_a);
    if (status.ok()) status = convert.vector(name(names.kv_a_norm), weights.kv_a_norm);
    if (weights.kv_b) {
      if (status.ok()) status = convert.matrix(name(names.kv_b), *weights.kv_b);
    } else {
      if (status.ok()) status = convert.stacked(name(names.k_b), weights.k_b);
      if (status.ok()) status = convert.stacked(name(names.v_b), weights.v_b);
    }
  }
  if (status.ok()) status = convert.matrix(name(names.wo), layer.wo);
  for (auto [pattern, tensor] :
       {std::pair{names.bq, &layer.bq}, std::pair{names.bk, &layer.bk},
        std::pair{names.bv, &layer.bv}, std::pair{names.q_norm, &layer.q_norm},
        std::pair{names.k_norm, &layer.k_norm}}) {
    if (status.ok() && tensor->has_value()) status = convert.vector(name(pattern), **tensor);
  }
  return status;
}

Status add_ffn(Converter& convert, int l, const LayerWeights& layer) {
  const TensorNames& names = gguf_tensor_names();
  const auto name = [l](std::string_view pattern) { return tensor_name(pattern, l); };
  Status status = convert.vector(name(names.ffn_norm), layer.ffn_norm);
  for (auto [pattern, tensor] :
       {std::pair{names.w_gate, &layer.w_gate}, std::pair{names.w_up, &layer.w_up},
        std::pair{names.w_down, &layer.w_down}}) {
    if (status.ok()) status = convert.matrix(name(pattern), *tensor);
  }
  if (!layer.experts || !status.ok()) return status;
  const ExpertWeights& experts = *layer.experts;
  status = convert.f32_matrix(name(names.router), experts.router);
  if (experts.selection_bias && status.ok()) {
    status = convert.vector(name(names.selection_bias), *experts.selection_bias);
  }
  for (auto [pattern, matrices] :
       {std::pair{names.expert_gate, &experts.gate}, std::pair{names.expert_up, &experts.up},
        std::pair{names.expert_down, &experts.down}}) {
    if (status.ok()) status = convert.stacked(name(pattern), *matrices);
  }
  for (auto [pattern, tensor] : {std::pair{names.shared_gate, &experts.shared_gate},
                                 std::pair{names.shared_up, &experts.shared_up},
                                 std::pair{names.shared_down, &experts.shared_down}}) {
    if (status.ok() && tensor->has_value()) status = convert.matrix(name(pattern), **tensor);
  }
  return status;
}

}  // namespace

Expected<QuantizeReport> quantize_model(const std::string& input, const std::string& output,
                                        TensorType type) {
  const TensorType supported[] = {TensorType::f32,  TensorType::f16,  TensorType::bf16,
                                  TensorType::q8_0, TensorType::q4_0, TensorType::q4_k,
                                  TensorType::q6_k};
  if (std::find(std::begin(supported), std::end(supported), type) == std::end(supported)) {
    return Error{fmt::format("cannot quantize to {}: choose F16, BF16, Q8_0, Q4_0, Q4_K or Q6_K",
                             kernels::tensor_type_name(type))};
  }
  auto loaded = load_model(input);
  if (!loaded) return Error{loaded.error().message};
  const ModelWeights& weights = *loaded;
  const ModelConfig& config = weights.config();

  GgufWriter writer;
  if (const GgufFile* source = weights.gguf()) {
    for (std::string_view key : source->keys()) {
      // The output is one file, whatever shards the input came in.
      if (key == "general.file_type" || key == "general.alignment" || key.starts_with("split.")) {
        continue;
      }
      if (Status copied = writer.copy_metadata(*source, key); !copied.ok()) {
        spdlog::warn("quantize: {}", copied.message());
      }
    }
    writer.add_uint32("general.file_type", gguf_file_type(type));
  } else if (Status written = write_hf_metadata(config, input, gguf_file_type(type), writer);
             !written.ok()) {
    return Error{written.message()};
  }

  QuantizeReport report;
  Converter convert{writer, report, type};
  const bool from_hf = weights.gguf() == nullptr;
  const TensorNames& names = gguf_tensor_names();
  Status status = convert.matrix(std::string(names.token_embedding), weights.token_embedding());
  for (std::size_t l = 0; status.ok() && l < weights.layers().size(); ++l) {
    const LayerWeights& layer = weights.layers()[l];
    status = add_attention(convert, static_cast<int>(l), layer, config, from_hf);
    if (status.ok()) status = add_ffn(convert, static_cast<int>(l), layer);
  }
  if (status.ok()) status = convert.vector(std::string(names.output_norm), weights.output_norm());
  if (status.ok() && !config.tied_embeddings) {
    status = convert.matrix(std::string(names.output), weights.output());
  }
  if (!status.ok()) return Error{fmt::format("{}: {}", input, status.message())};
  if (Status written = writer.write(output); !written.ok()) return Error{written.message()};
  return report;
}

}  // namespace tern::engine
