#include "engine/model/model_quantizer.h"

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/model/gguf_metadata_from_hf.h"
#include "engine/model/gguf_writer.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/quant.h"

namespace tern::engine {
namespace {

using kernels::TensorType;

// llama.cpp's general.file_type values.
std::uint32_t file_type_of(TensorType type) {
  switch (type) {
    case TensorType::f32:
      return 0;
    case TensorType::f16:
      return 1;
    case TensorType::q4_0:
      return 2;
    case TensorType::q8_0:
      return 7;
    case TensorType::q4_k:
      return 15;
    case TensorType::q6_k:
      return 18;
    case TensorType::bf16:
      return 32;
    default:
      return 1;
  }
}

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

struct Converter {
  GgufWriter& writer;
  QuantizeReport& report;
  TensorType requested;

  // Row r of the output comes from row source_row(r) of the input.
  using RowMap = std::function<std::int64_t(std::int64_t)>;

  Status add(const std::string& name, const WeightTensor& tensor, bool is_matrix,
             RowMap source_row = {}) {
    const TensorType type = is_matrix ? type_for_row(requested, tensor.cols) : TensorType::f32;
    ++report.tensors_by_type[std::string(kernels::tensor_type_name(type))];
    report.input_bytes += static_cast<std::uint64_t>(tensor.rows) * tensor.row_bytes;
    std::vector<std::int64_t> shape = is_matrix
                                          ? std::vector<std::int64_t>{tensor.cols, tensor.rows}
                                          : std::vector<std::int64_t>{tensor.cols * tensor.rows};
    const auto out_row_bytes =
        *kernels::tensor_bytes(type, static_cast<std::uint64_t>(tensor.cols));
    report.output_bytes += out_row_bytes * static_cast<std::uint64_t>(tensor.rows);
    return writer.add_tensor(
        name, type, std::move(shape),
        [tensor, type, out_row_bytes, source_row](std::span<std::byte> out) -> Status {
          std::vector<float> row(static_cast<std::size_t>(tensor.cols));
          for (std::int64_t r = 0; r < tensor.rows; ++r) {
            const std::int64_t from = source_row ? source_row(r) : r;
            kernels::dequantize_row(tensor.type,
                                    tensor.data + static_cast<std::size_t>(from) * tensor.row_bytes,
                                    row.data(), tensor.cols);
            if (!kernels::quantize_row(type, row.data(),
                                       out.data() + static_cast<std::size_t>(r) * out_row_bytes,
                                       tensor.cols)) {
              return Error{fmt::format("cannot quantize to {}", kernels::tensor_type_name(type))};
            }
          }
          return Status::success();
        });
  }
};

// GGUF `llama` stores Q/K rows interleaved for RoPE: within each head, row 2i holds HF row i and
// row 2i+1 holds HF row i + head_dim/2.
Converter::RowMap interleave_rows(int head_dim) {
  return [head_dim](std::int64_t row) {
    const std::int64_t head = row / head_dim, j = row % head_dim;
    return head * head_dim + (j % 2 == 0 ? j / 2 : j / 2 + head_dim / 2);
  };
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
    writer.add_uint32("general.file_type", file_type_of(type));
  } else if (Status written = write_hf_metadata(config, input, file_type_of(type), writer);
             !written.ok()) {
    return Error{written.message()};
  }

  QuantizeReport report;
  Converter convert{writer, report, type};
  const bool permute_qk = !weights.gguf() && config.architecture == "llama";
  Status status = convert.add("token_embd.weight", weights.token_embedding(), true);
  for (std::size_t l = 0; status.ok() && l < weights.layers().size(); ++l) {
    const LayerWeights& layer = weights.layers()[l];
    const std::string p = fmt::format("blk.{}.", l);
    const auto qk_map = permute_qk ? interleave_rows(config.head_dim) : Converter::RowMap{};
    for (auto [name, tensor, matrix, map] :
         {std::tuple{"attn_norm.weight", &layer.attn_norm, false, Converter::RowMap{}},
          std::tuple{"attn_q.weight", &layer.wq, true, qk_map},
          std::tuple{"attn_k.weight", &layer.wk, true, qk_map},
          std::tuple{"attn_v.weight", &layer.wv, true, Converter::RowMap{}},
          std::tuple{"attn_output.weight", &layer.wo, true, Converter::RowMap{}},
          std::tuple{"ffn_norm.weight", &layer.ffn_norm, false, Converter::RowMap{}},
          std::tuple{"ffn_gate.weight", &layer.w_gate, true, Converter::RowMap{}},
          std::tuple{"ffn_up.weight", &layer.w_up, true, Converter::RowMap{}},
          std::tuple{"ffn_down.weight", &layer.w_down, true, Converter::RowMap{}}}) {
      if (status.ok()) status = convert.add(p + name, *tensor, matrix, map);
    }
    for (auto [name, tensor] :
         {std::pair{"attn_q.bias", &layer.bq}, std::pair{"attn_k.bias", &layer.bk},
          std::pair{"attn_v.bias", &layer.bv}, std::pair{"attn_q_norm.weight", &layer.q_norm},
          std::pair{"attn_k_norm.weight", &layer.k_norm}}) {
      if (status.ok() && tensor->has_value()) status = convert.add(p + name, **tensor, false);
    }
  }
  if (status.ok()) status = convert.add("output_norm.weight", weights.output_norm(), false);
  if (status.ok() && !config.tied_embeddings) {
    status = convert.add("output.weight", weights.output(), true);
  }
  if (!status.ok()) return Error{fmt::format("{}: {}", input, status.message())};
  if (Status written = writer.write(output); !written.ok()) return Error{written.message()};
  return report;
}

}  // namespace tern::engine
