#include "engine/backend/cuda/device_model_weights.h"

#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kernels/cuda/weight_formats.h"
#include "kernels/tensor_type.h"

namespace tern::engine::cuda {
namespace {

using kernels::TensorType;

constexpr std::uint64_t kAlignment = 256;  // every tensor starts where any vector load may
constexpr std::uint64_t kCopyChunkBytes = std::uint64_t{64} << 20;
constexpr auto kLogInterval = std::chrono::seconds(2);

double mib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// Places tensors in one device allocation. Run once without a base to measure, then again with
// the allocation's base to hand out the device pointers: the same calls give the same offsets.
class Packer {
 public:
  struct Piece {
    const void* host;
    std::uint64_t bytes;
    std::uint64_t offset;
  };

  explicit Packer(std::byte* base) : base_(base) {}

  // A tied output matrix is the embedding table: the same host bytes are placed once.
  const void* place(const void* host, std::uint64_t bytes) {
    if (host == nullptr || bytes == 0) return nullptr;
    auto [it, inserted] = offsets_.try_emplace(host, total_);
    if (inserted) {
      pieces_.push_back({host, bytes, total_});
      total_ += (bytes + kAlignment - 1) / kAlignment * kAlignment;
    }
    return base_ == nullptr ? nullptr : base_ + it->second;
  }
  const float* place(const std::vector<float>& values) {
    return static_cast<const float*>(place(values.data(), values.size() * sizeof(float)));
  }
  kernels::cuda::DeviceWeights place(const WeightTensor& tensor) {
    return {tensor.type, static_cast<int>(tensor.rows), static_cast<int>(tensor.cols),
            place(tensor.data, static_cast<std::uint64_t>(tensor.rows) * tensor.row_bytes)};
  }

  std::uint64_t total() const { return total_; }
  const std::vector<Piece>& pieces() const { return pieces_; }

 private:
  std::byte* base_;
  std::uint64_t total_ = 0;
  std::map<const void*, std::uint64_t> offsets_;
  std::vector<Piece> pieces_;
};

// A matrix the kernels can read as stored: a known format, whole blocks per row, rows back to
// back, and sizes that fit the kernels' int arguments.
Status check_matrix(const ModelWeights& weights, const WeightTensor& tensor, std::string_view name,
                    std::int64_t layer) {
  const std::string where = layer < 0 ? fmt::format("{}: {}", weights.path(), name)
                                      : fmt::format("{}: layer {} {}", weights.path(), layer, name);
  if (kernels::cuda::weight_block_elements(tensor.type) == 0) {  // no kernel reads it
    return Error{
        fmt::format("{} has type {}, which the CUDA kernels do not read (they take F32, "
                    "F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K)",
                    where, kernels::tensor_type_name(tensor.type))};
  }
  const kernels::TensorTypeTraits traits = kernels::tensor_type_traits(tensor.type);
  if (tensor.cols % traits.block_elements != 0 ||
      tensor.row_bytes !=
          static_cast<std::size_t>(tensor.cols / traits.block_elements * traits.block_bytes)) {
    return Error{fmt::format("{}: rows of {} {} values are not whole blocks of {}", where,
                             tensor.cols, kernels::tensor_type_name(tensor.type),
                             traits.block_elements)};
  }
  if (tensor.rows > 0x7fffffff || tensor.cols > 0x7fffffff) {
    return Error{fmt::format("{}: {} x {} is too large for the CUDA kernels", where, tensor.rows,
                             tensor.cols)};
  }
  return Status::success();
}

}  // namespace

bool reads_q8_1_activations(TensorType type) {
  return type != TensorType::f32 && type != TensorType::f16 && type != TensorType::bf16;
}

Expected<DeviceModelWeights> DeviceModelWeights::upload(DeviceRuntime& runtime, Stream stream,
                                                        const ModelWeights& weights,
                                                        const ModelTables& tables) {
  if (Status valid = check_matrix(weights, weights.token_embedding(), "token_embd", -1);
      !valid.ok()) {
    return valid.error();
  }
  if (Status valid = check_matrix(weights, weights.output(), "output", -1); !valid.ok()) {
    return valid.error();
  }
  for (std::size_t i = 0; i < weights.layers().size(); ++i) {
    const LayerWeights& layer = weights.layers()[i];
    const std::pair<const WeightTensor*, std::string_view> matrices[] = {
        {&layer.wq, "attn_q"},      {&layer.wk, "attn_k"},       {&layer.wv, "attn_v"},
        {&layer.wo, "attn_output"}, {&layer.w_gate, "ffn_gate"}, {&layer.w_up, "ffn_up"},
        {&layer.w_down, "ffn_down"}};
    for (const auto& [tensor, name] : matrices) {
      if (Status valid = check_matrix(weights, *tensor, name, static_cast<std::int64_t>(i));
          !valid.ok()) {
        return valid.error();
      }
    }
  }

  DeviceModelWeights result;
  auto bind = [&](Packer& packer) {
    result.matrices_.clear();
    result.vectors_.clear();
    result.token_embedding_ = packer.place(weights.token_embedding());
    result.output_ = packer.place(weights.output());
    for (std::size_t i = 0; i < weights.layers().size(); ++i) {
      const LayerWeights& source = weights.layers()[i];
      result.matrices_.push_back({packer.place(source.wq), packer.place(source.wk),
                                  packer.place(source.wv), packer.place(source.wo),
                                  packer.place(source.w_gate), packer.place(source.w_up),
                                  packer.place(source.w_down)});
      const ModelTables::Layer& table = tables.layers[i];
      result.vectors_.push_back({packer.place(table.attn_norm), packer.place(table.ffn_norm),
                                 packer.place(table.bq), packer.place(table.bk),
                                 packer.place(table.bv), packer.place(table.q_norm),
                                 packer.place(table.k_norm)});
    }
    result.output_norm_ = packer.place(tables.output_norm);
    result.rope_inverse_frequencies_ = packer.place(tables.rope_inverse_frequencies);
    result.rope_pairs_ = static_cast<int>(tables.rope_inverse_frequencies.size());
  };
  Packer measure(nullptr);
  bind(measure);
  auto memory = DeviceAllocation::create(runtime, measure.total(),
                                         fmt::format("the weights of {}", weights.path()));
  if (!memory) return memory.error();
  result.memory_ = std::move(*memory);
  Packer packer(result.memory_.as<std::byte>());
  bind(packer);

  // Large models take a while even over PCIe: progress as the CPU loader logs it.
  const auto start = std::chrono::steady_clock::now();
  auto last_log = start;
  const std::uint64_t total = packer.total();
  std::uint64_t done = 0;
  for (const Packer::Piece& piece : packer.pieces()) {
    for (std::uint64_t at = 0; at < piece.bytes; at += kCopyChunkBytes) {
      const std::uint64_t bytes = std::min(kCopyChunkBytes, piece.bytes - at);
      if (Status copied =
              runtime.copy_to_device(result.memory_.as<std::byte>() + piece.offset + at,
                                     static_cast<const std::byte*>(piece.host) + at, bytes, stream);
          !copied.ok()) {
        return copied.error();
      }
      done += bytes;
      const auto now = std::chrono::steady_clock::now();
      if (now - last_log >= kLogInterval) {
        last_log = now;
        spdlog::info("uploading {} to {}: {:.0f} / {:.0f} MiB ({:.0f}%)", weights.path(),
                     runtime.name(), mib(done), mib(total),
                     100.0 * static_cast<double>(done) / static_cast<double>(total));
      }
    }
  }
  if (Status synced = runtime.synchronize(stream); !synced.ok()) return synced.error();
  spdlog::info("{}: {:.1f} MiB of weights on {} in {:.2f} s", weights.path(), mib(total),
               runtime.name(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return result;
}

const kernels::cuda::DeviceWeights& DeviceModelWeights::matrix(std::int32_t layer,
                                                               Matrix name) const {
  if (name == Matrix::output) return output_;
  return matrices_[static_cast<std::size_t>(layer)][name];
}

const float* DeviceModelWeights::vector(VectorRef ref) const {
  if (ref.name == Vector::output_norm) return output_norm_;
  return layer_vector(vectors_[static_cast<std::size_t>(ref.layer)], ref.name);
}

}  // namespace tern::engine::cuda
